"""The history builder (apps/agent/history.py): every kind of entry a turn records, read as a model sees it."""

from __future__ import annotations

import itertools

import pytest

from apps.agent import history
from apps.agent.providers import ModelRequest, ScriptedProvider, openai_messages
from apps.ledger import types as t
from apps.ledger.types import Recorded


class Log:
    """Entries as the store returns them: seq, kind, turn, actor, time and payload."""

    def __init__(self):
        self.entries: list[Recorded] = []
        self.seq = itertools.count(1)

    def add(self, turn_id: str, *events, actor: str = "agent") -> Log:
        for event in events:
            seq = next(self.seq)
            self.entries.append(Recorded(seq, event.kind, turn_id, actor, f"2026-12-01T10:{seq:02d}:00Z", event.payload()))
        return self

    def turn(self, turn_id: str, text: str = "hi", *, continuation: bool = False) -> Log:
        return self.add(turn_id, t.TurnDispatched(run_id=f"run-{turn_id}", message_id="" if continuation else f"m-{turn_id}",
                                                  text=text, continuation=continuation), actor="guest:alice")

    def round(self, turn_id: str, n: int, *calls: tuple[str, str, dict], text: str = "") -> Log:
        return self.add(turn_id, t.ModelRound(run_id=f"run-{turn_id}", round=n, text=text,
                                              calls=[{"call_id": c, "tool": tool, "arguments": a} for c, tool, a in calls]))

    def started(self, turn_id: str, call_id: str, tool: str, arguments: dict, *, key: str = "", attempt: int = 1, **extra) -> Log:
        return self.add(turn_id, t.ActionStarted(run_id=f"run-{turn_id}", call_id=call_id, tool=tool, action="webhook",
                                                 arguments=arguments, side_effecting=True,
                                                 idempotency_key=key or f"{turn_id}:{call_id}", attempt=attempt, **extra))

    def finished(self, turn_id: str, call_id: str, tool: str, *, ok: bool = True, output=None, error: str = "") -> Log:
        return self.add(turn_id, t.ActionFinished(run_id=f"run-{turn_id}", call_id=call_id, tool=tool, ok=ok, output=output, error=error))

    def reply(self, turn_id: str, text: str) -> Log:
        return self.add(turn_id, t.ModelRound(run_id=f"run-{turn_id}", round=99, text=text),
                        t.TurnComplete(run_id=f"run-{turn_id}", message_id=f"a-{turn_id}", text=text))

    def ambiguous(self, turn_id: str, call_id: str, tool: str) -> Log:
        return self.add(turn_id, t.TurnAmbiguous(run_id=f"run-{turn_id}", call_id=call_id, tool=tool,
                                                 idempotency_key=f"{turn_id}:{call_id}"))

    def resolved(self, turn_id: str, call_id: str, resolution: str, note: str = "", result=None, *, visible: bool = False) -> Log:
        return self.add(turn_id, t.QuarantineResolved(run_id=f"run-{turn_id}", call_id=call_id, resolution=resolution,
                                                      note=note, result=result, customer_visible=visible), actor="staff:ops")

    def build(self, **kwargs) -> history.History:
        return history.build(self.entries, **kwargs)


REFUND = {"order_id": "A-1", "amount": 20}


def interrupted_refund(log: Log | None = None, turn_id: str = "T1") -> Log:
    log = log or Log()
    return (log.turn(turn_id, "refund please").round(turn_id, 1, ("call_1_1", "issue_refund", REFUND), text="Refunding now.")
            .started(turn_id, "call_1_1", "issue_refund", REFUND).ambiguous(turn_id, "call_1_1", "issue_refund"))


def only_result(h: history.History, turn: int = 0, round_: int = 0):
    (value,) = h.turns[turn].rounds[round_].results.values()
    return value


class TestOutcomes:
    def test_a_completed_turn_has_its_message_its_calls_their_results_and_its_reply(self):
        log = Log().turn("T1", "where is A-1?").round("T1", 1, ("c1", "lookup_order", {"order_id": "A-1"}))
        log.add("T1", t.ActionStarted(run_id="run-T1", call_id="c1", tool="lookup_order", action="echo",
                                      arguments={"order_id": "A-1"}, side_effecting=False, idempotency_key="T1:c1"))
        log.finished("T1", "c1", "lookup_order", output={"status": "shipped"}).reply("T1", "It shipped.")

        [turn] = log.build().turns

        assert (turn.turn_id, turn.message, turn.continuation, turn.reply, turn.status) == ("T1", "where is A-1?", False, "It shipped.", "completed")
        assert [(c.call_id, c.tool, c.arguments) for c in turn.rounds[0].calls] == [("c1", "lookup_order", {"order_id": "A-1"})]
        assert turn.rounds[0].results == {"c1": {"status": "shipped"}}

    def test_an_error_is_the_outcome_of_a_failed_action(self):
        log = Log().turn("T1").round("T1", 1, ("c1", "lookup_order", {})).started("T1", "c1", "lookup_order", {})
        log.finished("T1", "c1", "lookup_order", ok=False, error="the shop said 404").reply("T1", "Could not find it.")

        assert only_result(log.build()) == {"error": "the shop said 404"}

    def test_a_denied_approval_says_who_denied_it(self):
        log = Log().turn("T1").round("T1", 1, ("c1", "issue_refund", REFUND))
        log.add("T1", t.ApprovalRequest(run_id="run-T1", call_id="c1", tool="issue_refund", arguments=REFUND))
        log.add("T1", t.ApprovalResponse(run_id="run-T1", call_id="c1", decision="deny",
                                         reviewed={"tool": "issue_refund", "arguments": REFUND}, answered_by="guest:bob"))
        log.reply("T1", "Declined.")

        assert only_result(log.build()) == {"denied": True, "answered_by": "guest:bob"}

    def test_a_client_tool_answer_is_its_output(self):
        log = Log().turn("T1").round("T1", 1, ("c1", "pick_date", {"label": "Delivery date"}))
        log.add("T1", t.ClientActionRequested(run_id="run-T1", call_id="c1", tool="pick_date", arguments={"label": "Delivery date"}))
        log.add("T1", t.ClientResultAccepted(run_id="run-T1", call_id="c1", tool="pick_date", output={"label": "2026-12-24"}))
        log.reply("T1", "Booked.")

        assert only_result(log.build()) == {"label": "2026-12-24"}

    def test_a_question_answer_is_the_answer(self):
        log = Log().turn("T1").round("T1", 1, ("c1", "ask_question", {"question": "Which order?"}))
        log.add("T1", t.QuestionRequest(run_id="run-T1", call_id="c1", question="Which order?"))
        log.add("T1", t.QuestionResponse(run_id="run-T1", call_id="c1", answer="A-7"))
        log.reply("T1", "Thanks.")

        assert only_result(log.build()) == {"answer": "A-7"}

    def test_a_declined_client_action_is_declined(self):
        log = Log().turn("T1").round("T1", 1, ("c1", "pick_date", {}))
        log.add("T1", t.ClientActionRequested(run_id="run-T1", call_id="c1", tool="pick_date", arguments={}))
        log.add("T1", t.ClientResultAccepted(run_id="run-T1", call_id="c1", tool="pick_date", output={"declined": True}))
        log.reply("T1", "No date then.")

        assert only_result(log.build()) == {"declined": True}

    def test_an_expired_client_action_is_expired_and_so_is_its_turn(self):
        log = Log().turn("T1").round("T1", 1, ("c1", "pick_date", {}))
        log.add("T1", t.ClientActionRequested(run_id="run-T1", call_id="c1", tool="pick_date", arguments={}, expires_at="x"))
        log.add("T1", t.TurnExpired(run_id="run-T1", call_ids=["c1"]))

        h = log.build()

        assert only_result(h) == {"expired": True} and h.turns[0].status == "expired"

    def test_an_ambiguous_action_is_an_unknown_outcome_with_when_it_was_attempted(self):
        h = interrupted_refund().build()

        [turn] = h.turns
        attempted_at = "2026-12-01T10:03:00Z"
        assert turn.status == "interrupted" and turn.reply == ""
        assert only_result(h)["outcome"] == "unknown" and only_result(h)["attempted_at"] == attempted_at
        assert h.reattempt_of("issue_refund", {"amount": 20, "order_id": "A-1"}) == history.Attempt(
            "T1", "call_1_1", "issue_refund", REFUND, attempted_at, "T1:call_1_1")

    def test_a_call_that_never_ran_is_said_to_be_not_run(self):
        log = Log().turn("T1").round("T1", 1, ("c1", "issue_refund", REFUND), ("c2", "lookup_order", {}))
        log.started("T1", "c1", "issue_refund", REFUND).ambiguous("T1", "c1", "issue_refund")

        results = log.build().turns[0].rounds[0].results

        assert results["c1"]["outcome"] == "unknown" and results["c2"]["outcome"] == "not_run"

    def test_a_failed_turn_is_failed(self):
        log = Log().turn("T1").add("T1", t.TurnFailed(run_id="run-T1", error="The model service is unavailable"))

        assert log.build().turns[0].status == "failed"


class TestMemory:
    def test_a_cleared_fact_never_reaches_a_model_through_the_remember_call_that_made_it(self):
        log = Log().turn("T1", "keep my colour in mind").round("T1", 1, ("m1", "remember", {"fact": "colour: teal"}))
        log.add("T1", t.ActionStarted(run_id="run-T1", call_id="m1", tool="remember", action="remember",
                                      arguments={"fact": "colour: teal"}, side_effecting=False, idempotency_key="T1:m1"),
                t.MemoryRemembered(run_id="run-T1", call_id="m1", fact_id="f1", text="colour: teal"))
        log.finished("T1", "m1", "remember", output={"remembered": "colour: teal", "fact_id": "f1"}).reply("T1", "Noted.")
        assert "teal" in repr(log.build().turns)

        log.add("", t.MemoryCleared(fact_ids=["f1"], cleared_by="guest:alice"), actor="guest:alice")

        [turn] = log.build().turns
        assert "teal" not in repr(turn)
        assert turn.rounds[0].calls[0].arguments == {"fact": history.FORGOTTEN} and only_result(log.build()) == {"forgotten": True}


class TestStaffResolutions:
    def test_done_is_the_outcome_with_the_result_staff_recorded_and_settles_the_attempt(self):
        h = interrupted_refund().resolved("T1", "call_1_1", "done", "checked in the shop", {"refund_id": "R-77"}, visible=True).build()

        assert only_result(h) == {"status": "done", "note": "checked in the shop", "result": {"refund_id": "R-77"}}
        assert h.unknown == {}

    def test_a_note_not_marked_customer_visible_never_reaches_the_model(self):
        done = interrupted_refund().resolved("T1", "call_1_1", "done", "refunded twice by mistake", {"refund_id": "R-77"}).build()
        abandoned = interrupted_refund().resolved("T1", "call_1_1", "abandon", "known for chargebacks").build()

        assert only_result(done) == {"status": "done", "note": "confirmed by staff after an interruption", "result": {"refund_id": "R-77"}}
        assert only_result(abandoned) == {"status": "abandoned", "note": ""}

    def test_abandon_is_an_abandoned_outcome_and_settles_the_attempt(self):
        h = interrupted_refund().resolved("T1", "call_1_1", "abandon", "customer called", visible=True).build()

        assert only_result(h) == {"status": "abandoned", "note": "customer called"}
        assert h.turns[0].status == "abandoned" and h.unknown == {}

    def test_not_done_then_retried_is_the_retry_result(self):
        log = interrupted_refund().resolved("T1", "call_1_1", "not_done_retry", "no refund in the shop")
        log.started("T1", "call_1_1", "issue_refund", REFUND, attempt=2).finished("T1", "call_1_1", "issue_refund", output={"refund_id": "R-1"})

        h = log.build()

        assert only_result(h) == {"refund_id": "R-1"} and h.unknown == {}


class TestReattempts:
    def test_a_reattempt_that_finished_settles_the_first_attempt(self):
        log = interrupted_refund().turn("T2", "", continuation=True).round("T2", 1, ("call_1_1", "issue_refund", REFUND))
        log.started("T2", "call_1_1", "issue_refund", REFUND, key="T1:call_1_1",
                    reattempt_of={"turn_id": "T1", "call_id": "call_1_1", "attempted_at": "x"})
        log.finished("T2", "call_1_1", "issue_refund", output={"refund_id": "R-1"}).reply("T2", "Refunded.")

        h = log.build()

        assert h.unknown == {} and [turn.status for turn in h.turns] == ["interrupted", "completed"]
        assert h.turns[1].message == "" and h.turns[1].continuation

    def test_a_reattempt_that_was_interrupted_again_keeps_the_first_identity(self):
        log = interrupted_refund().turn("T2", "", continuation=True).round("T2", 1, ("call_1_1", "issue_refund", REFUND))
        log.started("T2", "call_1_1", "issue_refund", REFUND, key="T1:call_1_1").ambiguous("T2", "call_1_1", "issue_refund")

        attempt = log.build().reattempt_of("issue_refund", REFUND)

        assert (attempt.turn_id, attempt.idempotency_key) == ("T1", "T1:call_1_1")

    def test_other_arguments_are_another_action(self):
        assert interrupted_refund().build().reattempt_of("issue_refund", {"order_id": "A-1", "amount": 21}) is None

    def test_the_turn_being_driven_is_left_out_and_entries_outside_turns_are_ignored(self):
        log = interrupted_refund().add("", t.ParticipantAdded(persona="guest:bob", permissions=["read"], added_by="guest:alice"))
        log.turn("T2", "hello")

        h = log.build(exclude_turn="T2")

        assert [turn.turn_id for turn in h.turns] == ["T1"]


SCRIPT = {"rules": [{"match": "refund", "steps": [
    {"call": "lookup_order", "arguments": {"order_id": "A-1"}},
    {"say": "Refunding now.", "call": "issue_refund", "arguments": REFUND},
    {"say": "Refund issued: {result}."},
]}]}


def continuation(h: history.History, rounds=()) -> ModelRequest:
    return ModelRequest(history=h.turns, message="", rounds=list(rounds), tools=[], continuation=True)


class TestScriptedContinuation:
    def two_step_interruption(self) -> Log:
        log = Log().turn("T1", "refund please").round("T1", 1, ("call_1_1", "lookup_order", {"order_id": "A-1"}))
        log.add("T1", t.ActionStarted(run_id="run-T1", call_id="call_1_1", tool="lookup_order", action="echo",
                                      arguments={"order_id": "A-1"}, side_effecting=False, idempotency_key="T1:call_1_1"))
        log.finished("T1", "call_1_1", "lookup_order", output={"order_id": "A-1"})
        log.round("T1", 2, ("call_2_1", "issue_refund", REFUND), text="Refunding now.")
        return log.started("T1", "call_2_1", "issue_refund", REFUND).ambiguous("T1", "call_2_1", "issue_refund")

    def test_goes_on_with_the_step_whose_outcome_is_unknown_not_from_the_first_step(self):
        answer = ScriptedProvider(SCRIPT).complete(continuation(self.two_step_interruption().build()))

        assert [(c.tool, c.arguments) for c in answer.calls] == [("issue_refund", REFUND)]

    def test_after_staff_marked_it_done_goes_on_after_it_with_the_recorded_result(self):
        log = self.two_step_interruption().resolved("T1", "call_2_1", "done", "ok", {"refund_id": "R-77"})

        answer = ScriptedProvider(SCRIPT).complete(continuation(log.build()))

        assert answer.calls == [] and "R-77" in answer.text and answer.text.startswith("Refund issued: ")

    def test_a_continuation_of_a_continuation_keeps_its_place_in_the_rule(self):
        log = self.two_step_interruption().turn("T2", "", continuation=True)
        log.round("T2", 1, ("call_1_1", "issue_refund", REFUND)).started("T2", "call_1_1", "issue_refund", REFUND, key="T1:call_2_1")
        log.ambiguous("T2", "call_1_1", "issue_refund")

        answer = ScriptedProvider(SCRIPT).complete(continuation(log.build()))

        assert [c.tool for c in answer.calls] == ["issue_refund"]


class TestWireFormat:
    def test_earlier_turns_become_tool_calls_and_tool_messages_in_order_without_null_content(self):
        h = self.two_turns()

        messages = openai_messages(ModelRequest(history=h.turns, message="and now?", rounds=[], tools=[]))

        assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant", "user"]
        assert messages[1] == {"role": "assistant", "content": "",
                               "tool_calls": [{"id": "c1", "type": "function",
                                               "function": {"name": "lookup_order", "arguments": '{"order_id": "A-1"}'}}]}
        assert messages[2] == {"role": "tool", "tool_call_id": "c1", "content": '{"status": "shipped"}'}
        assert messages[3] == {"role": "assistant", "content": "It shipped."}
        assert all(isinstance(m["content"], str) for m in messages)

    def test_a_continuation_says_so_instead_of_repeating_the_users_message(self):
        messages = openai_messages(continuation(interrupted_refund().build()))

        assert [m["role"] for m in messages] == ["user", "assistant", "tool", "system"]
        assert '"outcome": "unknown"' in messages[2]["content"]
        assert "interrupted" in messages[3]["content"]

    @staticmethod
    def two_turns() -> history.History:
        log = Log().turn("T1", "where is A-1?").round("T1", 1, ("c1", "lookup_order", {"order_id": "A-1"}))
        log.add("T1", t.ActionStarted(run_id="run-T1", call_id="c1", tool="lookup_order", action="echo",
                                      arguments={"order_id": "A-1"}, side_effecting=False, idempotency_key="T1:c1"))
        return log.finished("T1", "c1", "lookup_order", output={"status": "shipped"}).reply("T1", "It shipped.").build()


@pytest.mark.parametrize("kind", sorted(t.KINDS))
def test_every_kind_of_entry_can_be_read_into_a_history(kind):
    """No entry the log can hold breaks the builder, whatever turn it sits in."""
    log = interrupted_refund()
    cls = t.KINDS[kind]
    samples = {
        str: "x", int: 1, bool: False, dict: {}, list: [],
    }
    import dataclasses
    import typing

    hints = typing.get_type_hints(cls)
    values = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
            continue
        values[f.name] = samples.get(typing.get_origin(hints[f.name]) or hints[f.name], "x")
    if "call_id" in values:
        values["call_id"] = "call_1_1"
    if "resolution" in values:
        values["resolution"] = "done"
    if "outcome" in values:
        values["outcome"] = "not_completed"
    if "decision" in values:
        values["decision"] = "approve"
        values["reviewed"] = {"tool": "issue_refund", "arguments": REFUND}
    log.add("T1", cls(**values))

    # The part a person held (handoff entries, their messages) is a segment of its own, not a turn.
    assert [turn.turn_id for turn in log.build().turns if turn.status != "human"] == ["T1"]


class TestReattemptIdentityOverSeveralTurns:
    def test_a_reattempt_that_failed_leaves_the_first_attempt_unknown(self):
        log = interrupted_refund().turn("T2", "", continuation=True).round("T2", 1, ("call_1_1", "issue_refund", REFUND))
        log.started("T2", "call_1_1", "issue_refund", REFUND, key="T1:call_1_1")
        log.finished("T2", "call_1_1", "issue_refund", ok=False, error="the shop timed out")

        attempt = log.build().reattempt_of("issue_refund", REFUND)

        assert (attempt.turn_id, attempt.idempotency_key) == ("T1", "T1:call_1_1")

    def test_a_reattempt_of_a_reattempt_is_sent_with_the_key_the_first_one_was_sent_with(self):
        log = interrupted_refund().turn("T2", "", continuation=True).round("T2", 1, ("call_1_1", "issue_refund", REFUND))
        log.started("T2", "call_1_1", "issue_refund", REFUND, key="T1:call_1_1").ambiguous("T2", "call_1_1", "issue_refund")
        log.resolved("T1", "call_1_1", "done", "R-1 exists")  # T1 settled: T2's outcome is the unknown one now

        h = log.build()
        attempt = h.reattempt_of("issue_refund", REFUND)

        assert attempt.turn_id == "T2" and h.key_of(attempt.link()) == "T1:call_1_1"
