import base64
import io
import json
import os
import subprocess
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection

from apps.conversations.models import ChatMessage, Conversation
from apps.ledger import keys, store
from apps.ledger.chain import signing_key_from_seed
from apps.ledger.models import Event
from apps.ledger.replay import read_only, replay, verify
from tests.core.logs import approve, corrupt_payload, few_turns, flip, seqs, tamper, turn

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

ROOT = Path(__file__).resolve().parents[2]
UNKNOWN = "0b0e5a9a-8e0b-4d5c-9f6c-1d2e3f4a5b6c"


def run(*args: str) -> tuple[int, str, str]:
    """Run `manage.py conversation …` in-process; return (exit code, stdout, the error message)."""
    out = io.StringIO()
    try:
        call_command("conversation", *args, stdout=out)
    except CommandError as exc:
        return exc.returncode, out.getvalue(), str(exc)
    return 0, out.getvalue(), ""


def entry_seq(cid: str, kind: str, nth: int = 0) -> int:
    return [e.seq for e in store.read(cid) if e.kind == kind][nth]


def snapshot(cid: str) -> dict:
    """Everything replay, verify and what-if could change: every store's rows, the log and its head."""
    rows = {name: sorted(map(str, model.objects.filter(**{"id" if name == "conversations" else "conversation_id": cid}).values()))
            for name, model in store.MODELS.items()}
    log = list(Event.objects.filter(conversation_id=cid).order_by("seq").values_list("seq", "hash", "signature"))
    return {"rows": rows, "log": log, "head": Conversation.objects.values_list("head_seq", "head_hash").get(id=cid)}


@pytest.fixture
def log(start, clock):
    return few_turns(start, clock)


class TestActor:
    def test_accepts_both_identity_forms(self, start):
        cid = start("hello")["conversation_id"]

        results = [run("verify", cid, "--actor", actor) for actor in ("ops:alice", "okta:acme:alice@acme.com", "github:1234")]

        assert [code for code, _, _ in results] == [0, 0, 0] and all(out.startswith("OK") for _, out, _ in results)

    def test_refuses_anything_else_with_exit_code_2(self, db):
        bad = ["alice", "ops:", ":alice", "ops::alice", "a:b:c:d", "ops:al ice", "9ops:alice", ""]

        results = [run(operation, UNKNOWN, "--actor", actor) for actor in bad for operation in ("verify", "replay", "repair")]

        assert [(code, out) for code, out, _ in results] == [(2, "")] * len(bad) * 3
        assert all("provider:scope:external_id or provider:external_id" in error for _, _, error in results)

    def test_an_actor_is_required(self, db):
        with pytest.raises(CommandError, match="--actor"):
            call_command("conversation", "verify", UNKNOWN)


class TestVerify:
    def test_prints_ok_with_the_number_of_entries(self, log):
        code, out, _ = run("verify", log, "--actor", "ops:alice")

        assert code == 0
        assert out.strip() == f"OK conv-{log}: {len(seqs(log))} entries, every hash and signature verifies"

    def test_exits_1_naming_the_first_bad_seq(self, log):
        flip("payload", log, 4, 0.5)

        code, out, error = run("verify", log, "--actor", "ops:alice")

        assert code == 1 and error.startswith("verify failed at seq 4:")
        assert out.startswith(f"FAILED conv-{log}: entry 4: ")

    def test_an_unknown_conversation_exits_2(self, db):
        code, _, error = run("verify", UNKNOWN, "--actor", "ops:alice")

        assert code == 2 and "no such conversation" in error


class TestReplay:
    def test_prints_ok_when_the_stores_match_the_log(self, log):
        code, out, _ = run("replay", log, "--actor", "ops:alice")

        assert code == 0 and out.strip() == f"OK conv-{log}: {len(seqs(log))} entries replay to exactly the stored state"

    def test_a_store_changed_behind_the_logs_back_exits_1_and_shows_the_difference(self, log):
        message = ChatMessage.objects.filter(conversation_id=log, role="assistant").order_by("seq").first()
        ChatMessage.objects.filter(id=message.id).update(text="I never said that")

        code, out, error = run("replay", log, "--actor", "ops:alice")

        assert code == 1 and "1 difference" in error
        assert f"chat_messages ('{message.id}',).text: log says {json.dumps(message.text)}, store has \"I never said that\"" in out

    def test_an_unreadable_entry_exits_1_naming_it(self, log):
        corrupt_payload(log, 5)

        code, out, error = run("replay", log, "--actor", "ops:alice")

        assert code == 1 and "at seq 5" in error and "entry 5: unreadable" in out

    def test_replay_verify_and_what_if_change_nothing(self, log):
        before = snapshot(log)

        run("verify", log, "--actor", "ops:alice")
        run("replay", log, "--actor", "ops:alice")
        run("replay", log, "--actor", "ops:alice", "--what-if", "2", '[{"op": "replace", "path": "/text", "value": "x"}]')

        assert snapshot(log) == before

    def test_their_snapshot_refuses_writes(self, log):
        with pytest.raises(DatabaseError, match="read-only"), read_only():
            ChatMessage.objects.filter(conversation_id=log).update(text="changed")

        assert not ChatMessage.objects.filter(text="changed").exists()

    def test_their_snapshot_is_one_view_and_the_connection_writes_again_after_it(self, log):
        def setting(name: str) -> str:
            with connection.cursor() as cursor:
                cursor.execute(f"SHOW {name}")
                return cursor.fetchone()[0]

        with read_only():
            assert (setting("transaction_isolation"), setting("transaction_read_only")) == ("repeatable read", "on")
        with pytest.raises(DatabaseError, match="read-only"), read_only():
            ChatMessage.objects.filter(conversation_id=log).update(text="changed")

        # Neither the snapshot nor the write it refused leaves the connection read-only.
        assert (setting("transaction_isolation"), setting("transaction_read_only")) == ("read committed", "off")
        assert ChatMessage.objects.filter(conversation_id=log).update(text="changed") > 0


class TestWhatIf:
    def test_a_change_no_store_depends_on_does_not_diverge(self, log):
        seq = entry_seq(log, "model_round")

        code, out, _ = run("replay", log, "--actor", "ops:alice", "--what-if", str(seq),
                           '[{"op": "add", "path": "/usage/cached", "value": "n/a"}]')

        assert code == 0 and "the stores would not change" in out and out.rstrip().endswith("replay does not diverge")

    def test_changed_arguments_of_an_approved_call_break_its_binding(self, log):
        seq = entry_seq(log, "approval_request")

        code, out, error = run("replay", log, "--actor", "ops:alice", "--what-if", str(seq),
                               '[{"op": "replace", "path": "/arguments/amount", "value": 2000}]')

        assert code == 1 and f"entry {seq}" in error
        assert f"the stores first diverge at seq {seq}:" in out
        assert "arguments: recorded {\"amount\": 20, \"order_id\": \"A-1\"}" in out
        response = entry_seq(log, "approval_response")
        assert (f"binding broken: approval at seq {response} of call call_2_1: reviewed issue_refund "
                f'{{"amount": 20, "order_id": "A-1"}}, but the approval request at seq {seq} is issue_refund '
                '{"amount": 2000, "order_id": "A-1"}') in out

    def test_a_model_call_changed_before_its_approval_is_reported_against_the_model_call(self, log):
        seq = next(e.seq for e in store.read(log) if e.kind == "model_round" and e.payload["calls"]
                   and e.payload["calls"][0]["tool"] == "issue_refund")

        code, out, _ = run("replay", log, "--actor", "ops:alice", "--what-if", str(seq),
                           '[{"op": "replace", "path": "/calls/0/arguments/amount", "value": 5}]')

        assert code == 1 and f"but the model's call at seq {seq} is issue_refund" in out

    def test_a_completion_that_no_longer_follows_the_rule_does_not_hold(self, start, clock):
        cid = start("bye")["conversation_id"]
        seq = entry_seq(cid, "model_round")

        code, out, _ = run("replay", cid, "--actor", "ops:alice", "--what-if", str(seq),
                           '[{"op": "add", "path": "/calls/-", "value": {"call_id": "call_x", "tool": "lookup_order", "arguments": {}}}]')

        assert code == 1
        assert "the rule now says not_completed (complete_conversation must be the final tool of the run)" in out
        assert "completion would no longer hold" in out

    def test_a_completion_left_alone_still_holds(self, start, clock):
        cid = start("bye")["conversation_id"]
        seq = entry_seq(cid, "turn_dispatched")

        code, out, _ = run("replay", cid, "--actor", "ops:alice", "--what-if", str(seq),
                           '[{"op": "replace", "path": "/edge", "value": "widget"}]')

        assert code == 1 and "workflow_logs" in out and "completion would still hold" in out

    def test_a_change_that_makes_the_log_unfoldable_says_where_it_breaks(self, log):
        seq = entry_seq(log, "turn_dispatched", 1)

        code, out, _ = run("replay", log, "--actor", "ops:alice", "--what-if", str(seq),
                           '[{"op": "replace", "path": "/run_id", "value": "run_other"}]')

        assert code == 1 and f"replay breaks at seq {seq + 1}: does not apply to the state before it" in out

    def test_a_patch_can_come_from_a_file(self, log, tmp_path):
        patch = tmp_path / "patch.json"
        patch.write_text('[{"op": "replace", "path": "/text", "value": "refund twice"}]')

        code, out, _ = run("replay", log, "--actor", "ops:alice", "--what-if", str(entry_seq(log, "turn_dispatched", 1)), f"@{patch}")

        assert code == 1 and "chat_messages" in out and '"refund twice"' in out

    def test_a_bad_patch_or_seq_exits_2(self, start):
        cid = start("hello")["conversation_id"]
        cases = {
            ("2", "not json"): "the patch is not JSON",
            ("2", '[{"op": "jump", "path": "/text"}]'): "not an RFC 6902 JSON patch",
            ("2", '[{"op": "remove", "path": "/nothing/here"}]'): "does not apply to entry 2",
            ("999", '[{"op": "remove", "path": "/text"}]'): "has no entry 999",
        }

        results = {case: run("replay", cid, "--actor", "ops:alice", "--what-if", *case) for case in cases}

        assert {case: (code, cases[case] in error) for case, (code, _, error) in results.items()} == {
            case: (2, True) for case in cases
        }

    def test_goes_with_replay_only(self, db):
        code, _, error = run("verify", UNKNOWN, "--actor", "ops:alice", "--what-if", "2", "[]")

        assert code == 2 and "replay only" in error


class TestRepair:
    def test_removes_an_unreadable_entry_rechains_the_rest_and_records_who_did_it(self, log):
        count = len(seqs(log))
        corrupt_payload(log, 6)

        code, out, _ = run("repair", log, "--actor", "ops:alice")

        assert code == 0
        assert f"Repaired conv-{log}: removed 1, re-chained {count - 1}, recorded as entry {count} by ops:alice" in out
        assert out.rstrip().endswith(f"OK conv-{log}: {count} entries replay to exactly the stored state")
        assert seqs(log) == list(range(1, count + 1))
        last = store.read(log)[-1]
        assert (last.kind, last.actor) == ("repair", "ops:alice")
        assert [(r["seq"], r["reason"]) for r in last.payload["removed"]] == [(6, "the payload is not a JSON object")]
        assert verify(log).ok and replay(log).ok

    def test_an_unknown_kind_is_unreadable(self, log):
        tamper("UPDATE ledger_event SET kind = 'telepathy' WHERE conversation_id = %(cid)s AND seq = 3", {"cid": log})

        code, out, _ = run("repair", log, "--actor", "ops:alice")

        assert code == 0 and "removed entry 3 (telepathy): unknown kind 'telepathy'" in out
        assert verify(log).ok and replay(log).ok

    def test_entries_that_only_applied_on_top_of_a_removed_one_go_with_it(self, log, clock):
        dispatched = entry_seq(log, "turn_dispatched", 2)
        corrupt_payload(log, dispatched)

        code, out, _ = run("repair", log, "--actor", "ops:alice")

        assert code == 0
        gone = store.read(log)[-1].payload["removed"]
        assert gone[0]["seq"] == dispatched and all(r["seq"] > dispatched for r in gone[1:]) and len(gone) > 2
        assert {r["reason"].split(" (")[0] for r in gone[1:]} == {"cannot be replayed without the removed entries"}
        assert replay(log).ok and "when can you deliver?" not in [m.text for m in ChatMessage.objects.filter(conversation_id=log)]
        turn(log, "hello again", clock)
        assert verify(log).ok and replay(log).ok

    def test_with_nothing_unreadable_it_changes_nothing(self, log):
        before = snapshot(log)

        code, out, _ = run("repair", log, "--actor", "ops:alice")

        assert code == 0 and "nothing to repair" in out and snapshot(log) == before

    def test_refuses_to_re_sign_a_readable_entry_that_was_tampered_with(self, log):
        corrupt_payload(log, 6)
        flip("signature", log, 8, 0.5)
        before = snapshot(log)

        code, _, error = run("repair", log, "--actor", "ops:alice")

        assert code == 1 and "entry 8 is readable but fails verification (signature does not verify)" in error
        assert snapshot(log) == before

    def test_refuses_when_entries_are_missing(self, log):
        corrupt_payload(log, 6)
        tamper("DELETE FROM ledger_event WHERE conversation_id = %(cid)s AND seq = 9", {"cid": log})

        code, _, error = run("repair", log, "--actor", "ops:alice")

        assert code == 1 and "entries are missing" in error

    def test_a_conversation_repaired_mid_turn_goes_on(self, start, clock):
        cid = start("I want a refund")["conversation_id"]
        corrupt_payload(cid, entry_seq(cid, "action_finished"))

        run("repair", cid, "--actor", "ops:alice")
        approve(cid, clock)

        assert replay(cid).ok and verify(cid).ok
        assert ChatMessage.objects.filter(conversation_id=cid, role="assistant").exists()


@pytest.fixture
def signing_with(settings):
    """Switch the signing key (and the accepted retired keys) for the rest of the test."""

    def switch(seed: str, *, retired: tuple[str, ...] = ()) -> str:
        settings.WAYPOINT_SIGNING_KEY = seed
        settings.WAYPOINT_VERIFY_KEYS = [
            base64.b64encode(signing_key_from_seed(s).public.public_bytes_raw()).decode() for s in retired
        ]
        keys.signing_key.cache_clear()
        keys.verification_keys.cache_clear()
        return keys.signing_key().key_id

    yield switch
    keys.signing_key.cache_clear()
    keys.verification_keys.cache_clear()


class TestKeyRotation:
    OLD, NEW = base64.b64encode(b"o" * 32).decode(), base64.b64encode(b"n" * 32).decode()

    def test_entries_signed_by_a_retired_key_verify_while_it_is_listed(self, start, clock, signing_with):
        old = signing_with(self.OLD)
        cid = start("hello")["conversation_id"]
        new = signing_with(self.NEW, retired=(self.OLD,))

        turn(cid, "hello again", clock)

        assert set(Event.objects.filter(conversation_id=cid).values_list("key_id", flat=True)) == {old, new}
        assert run("verify", cid, "--actor", "ops:alice")[0] == 0

    def test_entries_signed_by_a_key_no_longer_listed_fail(self, start, clock, signing_with):
        old = signing_with(self.OLD)
        cid = start("hello")["conversation_id"]
        signing_with(self.NEW)

        code, _, error = run("verify", cid, "--actor", "ops:alice")

        assert code == 1 and error == f"verify failed at seq 1: unknown key id {old!r}"


class TestConsoleScript:
    def test_waypoint_conversation_verify_runs_the_command(self, log):
        db = connection.settings_dict
        env = {
            **os.environ,
            "DATABASE_URL": f"postgresql://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
            "DJANGO_SECRET_KEY": "test-cli",
            "WAYPOINT_DATA_DIR": str(settings.DATA_DIR),
        }

        result = subprocess.run([str(ROOT / ".venv/bin/waypoint"), "conversation", "verify", log, "--actor", "ops:alice"],
                                env=env, capture_output=True, text=True, timeout=60)

        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == f"OK conv-{log}: {len(seqs(log))} entries, every hash and signature verifies"


def test_a_run_after_a_repair_is_told_the_repaired_history_not_the_one_it_folded_before(log, clock):
    """The runner's history summary (apps/agent/runner.py `_opening`, `_earlier_turns`) is folded anew after a repair."""
    from apps.agent import history, runner

    turn(log, "hello again", clock)  # a run folds the summary up to here
    dispatched = entry_seq(log, "turn_dispatched", 2)
    corrupt_payload(log, dispatched)
    assert run("repair", log, "--actor", "ops:alice")[0] == 0

    told = runner._opening(log, "no-such-turn").earlier

    assert told == history.build(store.read(log))
    assert "when can you deliver?" not in [t.message for t in told.turns]
