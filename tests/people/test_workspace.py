import os
import uuid

import pytest

from apps.actions.models import ActionLog
from apps.workspaces.models import Runtime
from apps.workspaces.storage import Workspace, WorkspaceError, workspace_for
from tests.people.conftest import rules, state

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

FILE_TOOLS = [
    {"name": "save_note", "kind": "server", "action": "write_file"},
    {"name": "read_note", "kind": "server", "action": "read_file"},
    {"name": "list_notes", "kind": "server", "action": "list_files"},
]


def filing_assistant(make_assistant, *peeks):
    peeks = peeks or ("notes/secret.txt",)
    return make_assistant(
        model=rules(
            ("save", [{"call": "save_note", "arguments": {"path": "notes/secret.txt", "content": "the vault code is 4711"}},
                      {"say": "Saved {result}"}]),
            ("read", [{"call": "read_note", "arguments": {"path": "notes/secret.txt"}}, {"say": "{result}"}]),
            ("list", [{"call": "list_notes", "arguments": {"path": "notes"}}, {"say": "{result}"}]),
            ("peek", [{"calls": [{"call": "read_note", "arguments": {"path": p}} for p in peeks]}, {"say": "done"}]),
        ),
        tools=FILE_TOOLS,
    )


class TestTheHandle:
    def test_a_written_file_reads_back_and_is_listed(self, start):
        handle = workspace_for(start()["conversation_id"])

        handle.write("reports/q4.csv", "a,b\n1,2\n")

        assert handle.read("reports/q4.csv") == b"a,b\n1,2\n"
        assert handle.list() == ["reports/"] and handle.list("reports") == ["q4.csv"]

    @pytest.mark.parametrize("path", [
        "../escape.txt", "a/../../escape.txt", "/etc/passwd", "C:/escape.txt", "~/escape.txt", "a\\..\\b", "a\x00b", "", "..",
    ])
    def test_a_path_that_could_leave_the_workspace_is_refused(self, start, workspace_dir, path):
        handle = workspace_for(start()["conversation_id"])

        with pytest.raises(WorkspaceError):
            handle.write(path, "x")

        assert not any(p.name == "escape.txt" for p in workspace_dir.parent.rglob("*"))

    def test_a_symlink_to_a_file_is_refused_not_followed(self, start, tmp_path):
        handle = workspace_for(start()["conversation_id"])
        handle.write("readme.txt", "hello")
        outside = tmp_path / "outside.txt"
        outside.write_text("not yours")
        os.symlink(outside, handle.root / "files" / "link.txt")

        with pytest.raises(WorkspaceError, match="symlinks are refused"):
            handle.read("link.txt")

        assert handle.list() == ["readme.txt"]

    def test_writing_through_a_symlinked_directory_is_refused(self, start, tmp_path):
        handle = workspace_for(start()["conversation_id"])
        handle.write("placeholder.txt", "x")
        (tmp_path / "elsewhere").mkdir()
        os.symlink(tmp_path / "elsewhere", handle.root / "files" / "docs")

        with pytest.raises(WorkspaceError, match="symlinks are refused"):
            handle.write("docs/planted.txt", "x")

        assert list((tmp_path / "elsewhere").iterdir()) == []

    def test_a_workspace_area_replaced_by_a_symlink_is_refused(self, start):
        mine, theirs = workspace_for(start()["conversation_id"]), workspace_for(start()["conversation_id"])
        theirs.write("secret.txt", "theirs")
        mine.root.mkdir(parents=True)
        os.symlink(theirs.root / "files", mine.root / "files")

        with pytest.raises(WorkspaceError, match="symlinks are refused"):
            mine.read("secret.txt")

    @pytest.mark.parametrize("conversation_id", ["../other", "", "not-a-uuid", "*"])
    def test_a_handle_takes_only_a_conversation_id(self, conversation_id):
        with pytest.raises(WorkspaceError):
            Workspace(conversation_id)

    def test_a_handle_refuses_a_non_canonical_id_that_could_name_another_directory(self):
        with pytest.raises(WorkspaceError):
            Workspace(str(uuid.uuid4()).upper())

    def test_there_is_no_handle_for_an_unknown_conversation(self):
        with pytest.raises(WorkspaceError, match="no such conversation"):
            workspace_for(str(uuid.uuid4()))

    def test_writing_marks_the_workspace_runtime_in_use(self, start, clock):
        cid = start()["conversation_id"]

        workspace_for(cid).write("a.txt", "x", now=clock())

        assert Runtime.objects.get(conversation_id=cid).closed_at is None


class TestFileTools:
    def test_a_tool_writes_and_a_later_turn_reads_the_file(self, start, make_assistant, clock):
        from tests.people.conftest import turn

        cid = start("save this", assistant=filing_assistant(make_assistant))["conversation_id"]

        turn(cid, "read it back", clock)

        assert state(cid)["messages"][-1]["text"] == '{"content": "the vault code is 4711", "path": "notes/secret.txt"}'

    def test_one_conversation_cannot_read_anothers_files(self, start, make_assistant):
        owner = start("save this", assistant=filing_assistant(make_assistant))["conversation_id"]
        target = workspace_for(owner).root / "files" / "notes" / "secret.txt"
        assert target.read_text() == "the vault code is 4711"
        peeks = ["notes/secret.txt", f"../{owner}/files/notes/secret.txt", f"../../workspaces/{owner}/files/notes/secret.txt",
                 str(target), f"/{owner}/files/notes/secret.txt"]

        intruder = start("peek", assistant=filing_assistant(make_assistant, *peeks))["conversation_id"]

        reads = ActionLog.objects.filter(conversation_id=intruder, tool="read_note").order_by("call_id")
        assert [r.status for r in reads] == ["failed"] * len(peeks)
        assert all("4711" not in str(r.output) + r.error for r in reads)
        assert reads[0].error == "notes/secret.txt: no such file"

    def test_listing_shows_only_the_conversations_own_files(self, start, make_assistant):
        assistant = filing_assistant(make_assistant)
        start("save this", assistant=assistant)

        other = start("list my notes", assistant=assistant)["conversation_id"]

        listing = ActionLog.objects.get(conversation_id=other, tool="list_notes")
        assert (listing.status, listing.error) == ("failed", "notes: no such file")
