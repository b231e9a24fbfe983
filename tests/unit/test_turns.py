from apps.agent import turns
from apps.agent.config import check_config
from apps.ledger.types import Recorded
from tests.conftest import SUPPORT_CONFIG

CONFIG = check_config(SUPPORT_CONFIG)


def rec(seq, kind, **payload):
    return Recorded(seq=seq, kind=kind, turn_id="turn_1", actor="agent", created_at="t", payload={"run_id": "run_1", **payload})


def dispatched(text="hello"):
    return rec(1, "turn_dispatched", text=text, message_id="m1")


def round_(seq, n, text="", calls=(), closing=False):
    return rec(seq, "model_round", round=n, text=text, calls=list(calls), closing=closing)


def call(call_id, tool, **arguments):
    return {"call_id": call_id, "tool": tool, "arguments": arguments}


class TestNextStep:
    def test_calls_the_model_first(self):
        state = turns.turn_state([dispatched()])

        assert turns.next_step(state, CONFIG, 8) == turns.CallModel()

    def test_finishes_with_the_text_of_a_round_without_calls(self):
        state = turns.turn_state([dispatched(), round_(2, 1, "Hi there")])

        assert turns.next_step(state, CONFIG, 8) == turns.Finish("Hi there")

    def test_runs_a_server_action_that_has_not_started(self):
        state = turns.turn_state([dispatched(), round_(2, 1, calls=[call("c1", "lookup_order", order_id="A-1")])])

        step = turns.next_step(state, CONFIG, 8)

        assert isinstance(step, turns.RunAction) and step.call.call_id == "c1" and step.attempt == 1

    def test_asks_for_approval_before_running_a_gated_tool(self):
        state = turns.turn_state([dispatched(), round_(2, 1, calls=[call("c1", "issue_refund", amount=20)])])

        step = turns.next_step(state, CONFIG, 8)

        assert isinstance(step, turns.RequestClient) and [c.call_id for c in step.calls] == ["c1"]

    def test_waits_while_an_approval_is_unanswered(self):
        events = [dispatched(), round_(2, 1, calls=[call("c1", "issue_refund", amount=20)]),
                  rec(3, "approval_request", call_id="c1", tool="issue_refund", arguments={"amount": 20})]

        assert turns.next_step(turns.turn_state(events), CONFIG, 8) == turns.Wait()

    def test_a_denied_approval_goes_back_to_the_model_without_running_the_tool(self):
        events = [dispatched(), round_(2, 1, calls=[call("c1", "issue_refund", amount=20)]),
                  rec(3, "approval_request", call_id="c1", tool="issue_refund", arguments={"amount": 20}),
                  rec(4, "approval_response", call_id="c1", decision="deny", reviewed={}, answered_by="p:1")]
        state = turns.turn_state(events)

        assert turns.next_step(state, CONFIG, 8) == turns.CallModel()
        assert turns.past_rounds(state)[0].results["c1"] == {"denied": True, "answered_by": "p:1"}

    def test_a_side_effecting_action_without_outcome_is_ambiguous(self):
        tools = [t for t in SUPPORT_CONFIG["tools"] if t["name"] != "issue_refund"]
        config = check_config({**SUPPORT_CONFIG, "tools": [
            *tools, {"name": "issue_refund", "kind": "server", "action": "webhook", "url": "https://shop.example/r"}]})
        events = [dispatched(), round_(2, 1, calls=[call("c1", "issue_refund")]),
                  rec(3, "action_started", call_id="c1", tool="issue_refund", action="webhook", arguments={},
                      side_effecting=True, idempotency_key="turn_1:c1")]

        step = turns.next_step(turns.turn_state(events), config, 8)

        assert isinstance(step, turns.Ambiguous)

    def test_a_harmless_action_without_outcome_runs_again(self):
        events = [dispatched(), round_(2, 1, calls=[call("c1", "lookup_order")]),
                  rec(3, "action_started", call_id="c1", tool="lookup_order", action="echo", arguments={},
                      side_effecting=False, idempotency_key="turn_1:c1")]

        step = turns.next_step(turns.turn_state(events), CONFIG, 8)

        assert isinstance(step, turns.RunAction) and step.attempt == 2

    def test_spent_budget_without_text_makes_one_closing_attempt(self):
        events = [dispatched()]
        for n in range(1, 3):
            events += [round_(len(events) + 1, n, calls=[call(f"c{n}", "lookup_order")]),
                       rec(len(events) + 2, "action_started", call_id=f"c{n}", tool="lookup_order", action="echo",
                           arguments={}, side_effecting=False, idempotency_key="k"),
                       rec(len(events) + 3, "action_finished", call_id=f"c{n}", tool="lookup_order", ok=True, output={})]

        assert turns.next_step(turns.turn_state(events), CONFIG, 2) == turns.CallModel(closing=True)

    def test_an_empty_closing_attempt_gives_the_fallback_reply(self):
        events = [dispatched(), round_(2, 1), round_(3, 2, closing=True)]

        assert turns.next_step(turns.turn_state(events), CONFIG, 8) == turns.Finish(turns.FALLBACK_REPLY, fallback=True)


class TestCompletionOutcome:
    def test_is_refused_when_the_assistant_does_not_allow_it(self):
        config = {**CONFIG, "allow_conversation_completion": False}
        events = [dispatched(), round_(2, 1, "Bye", calls=[call("c1", "complete_conversation")])]

        step = turns.next_step(turns.turn_state(events), config, 8)

        assert step == turns.EvaluateCompletion(step.call, "not_completed", "completion is not enabled for this assistant")

    def test_is_premature_while_a_client_action_is_requested_in_the_same_round(self):
        events = [dispatched(), round_(2, 1, calls=[call("c1", "complete_conversation"), call("c2", "pick_date")]),
                  rec(3, "client_action_requested", call_id="c2", tool="pick_date", arguments={}),
                  rec(4, "client_result_accepted", call_id="c2", tool="pick_date", output={"label": "x"})]

        step = turns.next_step(turns.turn_state(events), CONFIG, 8)

        assert step.outcome == "not_completed" and "pending" in step.reason

    def test_is_premature_when_another_server_tool_runs_after_it(self):
        events = [dispatched(), round_(2, 1, calls=[call("c1", "complete_conversation"), call("c2", "lookup_order")]),
                  rec(3, "action_started", call_id="c2", tool="lookup_order", action="echo", arguments={},
                      side_effecting=False, idempotency_key="k"),
                  rec(4, "action_finished", call_id="c2", tool="lookup_order", ok=True, output={})]

        step = turns.next_step(turns.turn_state(events), CONFIG, 8)

        assert step.outcome == "not_completed" and "final" in step.reason

    def test_is_accepted_as_the_final_tool_of_an_allowed_assistant(self):
        events = [dispatched(), round_(2, 1, "Goodbye!", calls=[call("c1", "complete_conversation")]),
                  rec(3, "completion_requested", call_id="c1", outcome="completed")]

        step = turns.next_step(turns.turn_state(events), CONFIG, 8)

        assert step == turns.Finish("Goodbye!", complete_conversation=True)


class TestConversationLocks:
    def test_a_lock_is_dropped_with_its_last_user_and_still_serialises_its_users(self):
        import threading
        import time

        from apps.agent.runner import ConversationLocks

        locks, inside, most = ConversationLocks(), [0], [0]

        def work():
            with locks.hold("c1"):
                inside[0] += 1
                most[0] = max(most[0], inside[0])
                time.sleep(0.01)
                inside[0] -= 1

        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for n in range(50):
            with locks.hold(f"conversation-{n}"):
                pass

        assert most[0] == 1 and len(locks) == 0
