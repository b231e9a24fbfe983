"""
`conversation replay|verify|repair <conversation-id> --actor <identity> [--what-if <seq> <json-patch>]`.

Exit codes: 0 the check passed (or the repair was done), 1 it failed (the first bad entry or the
differences are printed), 2 the command was used wrongly (bad actor, unknown conversation, bad
patch). `replay` and `verify` only read; usable as CI checks.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from apps.conversations import broadcast
from apps.conversations.models import Conversation
from apps.ledger import repair as repairing
from apps.ledger import replay as replaying

FAILED, MISUSED = 1, 2


class Command(BaseCommand):
    help = "Replay, verify or repair a conversation's signed event log."

    def add_arguments(self, parser):
        parser.add_argument("operation", choices=["replay", "verify", "repair"])
        parser.add_argument("conversation_id")
        parser.add_argument("--actor", required=True, help="who does this: provider:scope:external_id or provider:external_id")
        parser.add_argument(
            "--what-if", nargs=2, metavar=("SEQ", "JSON_PATCH"),
            help="replay only: apply an RFC 6902 JSON patch (text, or @file) to entry SEQ's payload in memory "
            "and report where replay diverges",
        )

    def handle(self, *args, operation, conversation_id, actor, what_if, **options):
        try:
            replaying.check_actor(actor)
        except ValueError as exc:
            raise CommandError(str(exc), returncode=MISUSED) from exc
        if what_if is not None and operation != "replay":
            raise CommandError("--what-if goes with replay only", returncode=MISUSED)
        cid = self._conversation(conversation_id)
        if operation == "verify":
            self._verify(cid)
        elif operation == "replay" and what_if is not None:
            self._what_if(cid, *what_if)
        elif operation == "replay":
            self._replay(cid)
        else:
            self._repair(cid, actor)

    def _conversation(self, conversation_id: str) -> str:
        try:
            cid = str(uuid.UUID(conversation_id))
        except ValueError:
            cid = None
        if cid is None or not Conversation.objects.filter(id=cid).exists():
            raise CommandError(f"no such conversation: {conversation_id}", returncode=MISUSED)
        return cid

    def _verify(self, cid: str) -> None:
        result = replaying.verify(cid)
        if not result.ok:
            self.stdout.write(f"FAILED conv-{cid}: entry {result.first_bad_seq}: {result.problem}")
            raise CommandError(f"verify failed at seq {result.first_bad_seq}: {result.problem}", returncode=FAILED)
        self.stdout.write(f"OK conv-{cid}: {result.checked} entries, every hash and signature verifies")

    def _replay(self, cid: str) -> None:
        report = replaying.replay(cid)
        if not report.ok:
            for line in report.differences:
                self.stdout.write(f"  {line}")
            if report.unreplayable_seq is not None:
                raise CommandError(f"replay stopped at seq {report.unreplayable_seq}, which cannot be replayed", returncode=FAILED)
            raise CommandError(f"replay failed: {len(report.differences)} difference(s) from the stores", returncode=FAILED)
        self.stdout.write(f"OK conv-{cid}: {report.events} entries replay to exactly the stored state")

    def _what_if(self, cid: str, seq: str, patch: str) -> None:
        if patch.startswith("@"):
            try:
                patch = Path(patch[1:]).read_text()
            except OSError as exc:
                raise CommandError(f"cannot read the patch: {exc}", returncode=MISUSED) from exc
        try:
            report = replaying.what_if(cid, seq=int(seq), patch=patch)
        except ValueError as exc:
            raise CommandError(str(exc), returncode=MISUSED) from exc
        out = self.stdout.write
        out(f"What if entry {report.seq} of conv-{cid} were changed by {json.dumps(report.patch)}:")
        if report.breaks_at is not None:
            out(f"  replay breaks at seq {report.breaks_at}: {report.problem}")
        if report.diverges_at is not None:
            out(f"  the stores first diverge at seq {report.diverges_at}:")
            for line in report.differences:
                out(f"    {line}")
        elif report.breaks_at is None:
            out("  the stores would not change")
        for line in report.approvals:
            out(f"  binding broken: {line}")
        for line in report.completion:
            out(f"  {line}")
        if report.completion_holds is not None:
            out(f"  completion {'would still hold' if report.completion_holds else 'would no longer hold'}")
        if report.diverges:
            raise CommandError(f"replay diverges with the change to entry {report.seq}", returncode=FAILED)
        out("  replay does not diverge")

    def _repair(self, cid: str, actor: str) -> None:
        try:
            report = repairing.repair(conversation_id=cid, actor=actor, now=timezone.now())
        except repairing.RepairRefused as exc:
            raise CommandError(f"repair refused: {exc}", returncode=FAILED) from exc
        if report.repair_seq is None:
            self.stdout.write(f"OK conv-{cid}: nothing to repair, all {report.kept} entries are readable")
            return
        broadcast.state_changed(cid, report.repair_seq)  # open pages hold seqs that changed: they reload
        for item in report.removed:
            self.stdout.write(f"  removed entry {item['seq']} ({item['kind']}): {item['reason']}")
        self.stdout.write(
            f"Repaired conv-{cid}: removed {len(report.removed)}, re-chained {report.kept}, "
            f"recorded as entry {report.repair_seq} by {actor}"
        )
        self._verify(cid)
        self._replay(cid)
