"""
Each conversation's workspace: a directory of its own, reached only through a handle bound to it.

    <WAYPOINT_WORKSPACE_DIR>/<conversation id>/
        files/       what tools write and read (`write_file`, `read_file`, `list_files`)
        artifacts/   artifact content, one directory per tool call: <turn id>/<call id>/<name>
        tmp/         runtime scratch space, released when the conversation is closed for being idle

A tool receives the `Workspace` of the conversation whose turn it runs in and nothing else. Paths
are relative: absolute paths, `..`, NUL bytes and backslashes are refused before the filesystem is
touched, and every directory is then opened relative to the one before it with `O_NOFOLLOW`, so a
symlink anywhere on the way (even one created between a check and a use) is refused rather than
followed. Process-level isolation (a sandbox per conversation) is a deployment matter: see
docs/people.md.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import secrets
import shutil
import stat
import uuid
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from apps.conversations import broadcast, faults
from apps.conversations.actions import locked
from apps.conversations.models import Conversation
from apps.ledger import store
from apps.ledger.types import ArtifactCreated
from apps.runs.models import WorkflowLog
from apps.workspaces.models import Artifact, Runtime

AREAS = ("files", "artifacts", "tmp")
MAX_PATH_CHARS = 300
MAX_DEPTH = 16
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._ -]{0,99}$")
_SEGMENT = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,99}$")
_MEDIA_TYPE = re.compile(r"^[a-z0-9][a-z0-9.+-]*/[a-z0-9][a-z0-9.+-]*$")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class WorkspaceError(ValueError):
    """A workspace operation was refused or failed; the message is safe to show to the model."""


def check_path(path: Any) -> list[str]:
    """
    Split a workspace-relative path into its parts.

    :raises WorkspaceError: not text, absolute, with `..`, NUL or backslash, too long or too deep
    """
    if not isinstance(path, str) or not path.strip():
        raise WorkspaceError("path must be non-empty text")
    if len(path) > MAX_PATH_CHARS:
        raise WorkspaceError(f"path is longer than {MAX_PATH_CHARS} characters")
    if "\x00" in path or "\\" in path:
        raise WorkspaceError("path may not contain NUL or backslashes")
    if path.startswith("/") or re.match(r"^[A-Za-z]:", path) or path.startswith("~"):
        raise WorkspaceError("absolute paths are refused: use a path relative to the workspace")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise WorkspaceError("'..' is refused: a path cannot leave the workspace")
    if not parts:
        raise WorkspaceError("path names no file")
    if len(parts) > MAX_DEPTH:
        raise WorkspaceError(f"path is deeper than {MAX_DEPTH} directories")
    return parts


def segment(value: str) -> str:
    """The directory name for a turn or call id: itself when plain, else a digest of it."""
    if _SEGMENT.match(value):
        return value
    return "h-" + hashlib.sha256(value.encode()).hexdigest()[:32]


def check_conversation_id(conversation_id: Any) -> str:
    """
    Return a conversation id in its canonical UUID form.

    :raises WorkspaceError: not a UUID (it could otherwise name another directory)
    """
    try:
        canonical = str(uuid.UUID(str(conversation_id)))
    except ValueError:
        raise WorkspaceError("not a conversation id") from None
    if canonical != str(conversation_id):
        raise WorkspaceError("not a conversation id in canonical form")
    return canonical


def _refusal(exc: OSError, path: str) -> WorkspaceError:
    if exc.errno == errno.ELOOP:
        return WorkspaceError(f"{path}: symlinks are refused")
    if exc.errno == errno.ENOENT:
        return WorkspaceError(f"{path}: no such file")
    if exc.errno == errno.ENOTDIR:
        return WorkspaceError(f"{path}: a part of the path is not a directory")
    if exc.errno == errno.EISDIR:
        return WorkspaceError(f"{path}: is a directory")
    return WorkspaceError(f"{path}: {os.strerror(exc.errno or 0) or 'refused'}")


class Workspace:
    """
    The handle to one conversation's workspace; every method stays inside it.

    `lease` (holder, version) fences the log writes a handle makes (artifacts) the way the runner's
    own writes are fenced.
    """

    def __init__(self, conversation_id: str, *, area: str = "files", lease: tuple[str, int] | None = None):
        self.conversation_id = check_conversation_id(conversation_id)
        if area not in AREAS:
            raise WorkspaceError(f"unknown workspace area {area!r}")
        self.area = area
        self.lease = lease

    def __repr__(self) -> str:
        return f"<Workspace conv-{self.conversation_id} {self.area}>"

    @property
    def root(self) -> Path:
        return Path(settings.WAYPOINT_WORKSPACE_DIR) / self.conversation_id

    def scratch(self) -> Workspace:
        """The runtime scratch area of the same conversation (released on idle close)."""
        return Workspace(self.conversation_id, area="tmp", lease=self.lease)

    # --- directory walking, symlink-proof ---

    def _open_area(self, *, create: bool, shown: str) -> int:
        base = Path(settings.WAYPOINT_WORKSPACE_DIR)
        if create:
            base.mkdir(parents=True, exist_ok=True)
        fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
        return self._descend(fd, [self.conversation_id, self.area], create=create, shown=shown)

    def _descend(self, fd: int, parts: list[str], *, create: bool, shown: str) -> int:
        """Open each directory in turn relative to the last; consumes `fd`, returns the last one's."""
        try:
            for part in parts:
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o700, dir_fd=fd)
                try:
                    next_fd = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except NotADirectoryError:
                    # O_DIRECTORY is checked before O_NOFOLLOW: a symlink shows up as "not a directory".
                    if stat.S_ISLNK(os.lstat(part, dir_fd=fd).st_mode):
                        raise OSError(errno.ELOOP, "symlink") from None
                    raise
                os.close(fd)
                fd = next_fd
        except OSError as exc:
            os.close(fd)
            raise _refusal(exc, shown) from None
        return fd

    def _directory(self, parts: list[str], *, create: bool, shown: str) -> int:
        try:
            area = self._open_area(create=create, shown=shown)
        except FileNotFoundError:
            raise WorkspaceError(f"{shown}: no such file") from None
        return self._descend(area, parts, create=create, shown=shown)

    # --- files ---

    def read(self, path: str) -> bytes:
        """
        Return a file's content.

        :raises WorkspaceError: refused path, symlink, not a regular file, missing or too large
        """
        parts = check_path(path)
        directory = self._directory(parts[:-1], create=False, shown=path)
        try:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), dir_fd=directory)
        except OSError as exc:
            raise _refusal(exc, path) from None
        finally:
            os.close(directory)
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise WorkspaceError(f"{path}: not a regular file")
            if info.st_size > settings.WAYPOINT_WORKSPACE_MAX_FILE_BYTES:
                raise WorkspaceError(f"{path}: larger than {settings.WAYPOINT_WORKSPACE_MAX_FILE_BYTES} bytes")
            return f.read()

    def write(self, path: str, data: bytes | str, *, now: datetime | None = None) -> dict[str, Any]:
        """
        Write a file atomically (a temporary file renamed over the name), creating directories.

        :raises WorkspaceError: refused path, a symlink on the way, too large
        """
        parts = check_path(path)
        content = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        if len(content) > settings.WAYPOINT_WORKSPACE_MAX_FILE_BYTES:
            raise WorkspaceError(f"{path}: larger than {settings.WAYPOINT_WORKSPACE_MAX_FILE_BYTES} bytes")
        if now is not None:
            touch_runtime(conversation_id=self.conversation_id, now=now)
        directory = self._directory(parts[:-1], create=True, shown=path)
        temporary = f".{parts[-1][:60]}.{secrets.token_hex(6)}.part"
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                         0o600, dir_fd=directory)
            with os.fdopen(fd, "wb") as f:
                f.write(content)
                f.flush()
                os.fsync(f.fileno())
            # rename never follows a symlink at the destination: it replaces the name itself.
            os.replace(temporary, parts[-1], src_dir_fd=directory, dst_dir_fd=directory)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=directory)
            raise _refusal(exc, path) from None
        finally:
            os.close(directory)
        return {"path": "/".join(parts), "size": len(content), "sha256": hashlib.sha256(content).hexdigest()}

    def list(self, path: str = "") -> list[str]:
        """
        List a directory (the area's top when `path` is empty); directories end with `/`.

        Symlinks and unfinished writes are not listed.
        :raises WorkspaceError: refused path, or not a directory
        """
        parts = check_path(path) if path not in ("", ".", "/") else []
        try:
            directory = self._directory(parts, create=False, shown=path or ".")
        except WorkspaceError:
            if not parts:
                return []
            raise
        try:
            with os.scandir(directory) as entries:
                out = []
                for entry in entries:
                    if entry.is_symlink() or entry.name.endswith(".part"):
                        continue
                    out.append(entry.name + "/" if entry.is_dir(follow_symlinks=False) else entry.name)
        finally:
            os.close(directory)
        return sorted(out)

    def exists(self, path: str) -> bool:
        """Whether a regular file is at `path` (False for anything refused)."""
        try:
            self.read(path)
        except WorkspaceError:
            return False
        return True

    # --- artifacts ---

    def create_artifact(
        self, *, turn_id: str, call_id: str, name: str, content: bytes | str, now: datetime,
        media_type: str = "application/octet-stream", source_identity: str = "", source_revision: str = "",
    ) -> dict[str, Any]:
        """
        Store a tool call's artifact: its content in the workspace, its record in the log.

        Idempotent per (`turn_id`, `call_id`): a call that already has an artifact gets that one back,
        whatever it asks for now (a retried call after a crash must not make a second one).
        :raises WorkspaceError: a bad name or media type, a turn of another conversation, too large
        """
        existing = Artifact.objects.filter(conversation_id=self.conversation_id, turn_id=turn_id, call_id=call_id).first()
        if existing is not None:
            return artifact_dict(existing)
        run_id = (
            WorkflowLog.objects.filter(conversation_id=self.conversation_id, turn_id=turn_id).values_list("run_id", flat=True).first()
        )
        if run_id is None:
            raise WorkspaceError("no such turn in this conversation")
        if not isinstance(name, str) or not _NAME.match(name):
            raise WorkspaceError("artifact name: 1-100 letters, digits, '.', '_', '-' or spaces, starting with a letter or digit")
        if not isinstance(media_type, str) or not _MEDIA_TYPE.match(media_type) or len(media_type) > 100:
            raise WorkspaceError("media_type must look like text/csv")
        body = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        faults.reach("before_artifact")
        relative = f"{segment(turn_id)}/{segment(call_id)}/{name}"
        Workspace(self.conversation_id, area="artifacts").write(relative, body, now=now)
        event = ArtifactCreated(
            run_id=run_id, call_id=call_id, artifact_id=f"art_{secrets.token_hex(10)}", name=name, media_type=media_type,
            sha256=hashlib.sha256(body).hexdigest(), size=len(body), path=f"artifacts/{relative}",
            source_identity=source_identity or f"tool-call:{turn_id}:{call_id}", source_revision=source_revision,
        )
        try:
            with transaction.atomic():
                conversation = locked(self.conversation_id)
                if not Artifact.objects.filter(turn_id=turn_id, call_id=call_id).exists():
                    recorded = store.append(conversation, [event], turn_id=turn_id, actor="agent", now=now, lease=self.lease)
                    broadcast.on_commit(self.conversation_id, recorded[-1].seq)
                    transaction.on_commit(partial(faults.reach, "after_artifact"))
        except IntegrityError:
            pass  # another writer recorded this call's artifact first (the unique constraint): use theirs
        return artifact_dict(Artifact.objects.get(turn_id=turn_id, call_id=call_id))

    def artifact_content(self, path: str) -> bytes:
        """
        Return the content of an artifact by its recorded path (`artifacts/...`).

        :raises WorkspaceError: not an artifact path, or the content is gone
        """
        if not isinstance(path, str) or not path.startswith("artifacts/"):
            raise WorkspaceError("not an artifact path")
        return Workspace(self.conversation_id, area="artifacts").read(path[len("artifacts/"):])

    def artifact_files(self) -> dict[tuple[str, str], list[str]]:
        """Every file under artifacts/, by (turn directory, call directory), as `artifacts/...` paths."""
        out: dict[tuple[str, str], list[str]] = {}
        area = Workspace(self.conversation_id, area="artifacts")
        for turn in area.list():
            if not turn.endswith("/"):
                continue
            for call in area.list(turn):
                if call.endswith("/"):
                    files = [f for f in area.list(turn + call) if not f.endswith("/")]
                    out[(turn[:-1], call[:-1])] = [f"artifacts/{turn}{call}{f}" for f in files]
        return out

    # --- runtime ---

    def release_runtime(self) -> bool:
        """Delete the runtime scratch area; files and artifacts stay. Whether there was one."""
        path = self.root / "tmp"
        if path.is_symlink() or not path.exists():
            return False
        # On Linux rmtree works on file descriptors and does not follow symlinks inside the tree.
        shutil.rmtree(path)
        return True


def touch_runtime(*, conversation_id: str, now: datetime) -> None:
    """Make sure the conversation has a runtime record (it is in use)."""
    Runtime.objects.get_or_create(conversation_id=conversation_id, defaults={"opened_at": now})


def workspace_for(conversation_id: str, *, lease: tuple[str, int] | None = None) -> Workspace:
    """
    Return the handle of one conversation's workspace.

    :raises WorkspaceError: not a conversation id, or no such conversation
    """
    cid = check_conversation_id(conversation_id)
    if not Conversation.objects.filter(id=cid).exists():
        raise WorkspaceError("no such conversation")
    return Workspace(cid, lease=lease)


def _iso_or_none(value) -> str | None:
    return store.iso(value) if value else None


def artifact_dict(artifact: Artifact) -> dict[str, Any]:
    """An artifact record as the API, the pages and the tool that made it show it."""
    return {
        "artifact_id": artifact.artifact_id,
        "turn_id": artifact.turn_id,
        "call_id": artifact.call_id,
        "name": artifact.name,
        "media_type": artifact.media_type,
        "sha256": artifact.sha256,
        "size": artifact.size,
        "path": artifact.path,
        "source": {"identity": artifact.source_identity, "revision": artifact.source_revision},
        "status": artifact.status,
        "created_at": _iso_or_none(artifact.created_at),
        "acknowledged_by": artifact.acknowledged_by,
        "acknowledged_at": _iso_or_none(artifact.acknowledged_at),
    }
