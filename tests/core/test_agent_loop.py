import hashlib
import hmac
import json
import threading
from datetime import timedelta

import pytest
from django.db import connection

from apps.actions.models import ActionLog
from apps.agent import actions, answers, runner
from apps.agent.state import conversation_state
from apps.agent.turns import FALLBACK_REPLY
from apps.conversations import queries
from apps.conversations.errors import (
    ActionResultConflict,
    ApprovalMismatch,
    ConversationIsCompleted,
    RunExpired,
)
from apps.ledger import store
from apps.ledger.replay import replay
from tests.conftest import SUPPORT_CONFIG
from tests.fakes import vendor as wire
from tests.fakes.receiver import Receiver

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def state(cid):
    return conversation_state(queries.conversation_for(cid))


def kinds(cid):
    return [e.kind for e in store.read(cid)]


def answer(cid, call_id, output, clock, persona="guest:alice", run_id=None):
    return answers.accept_results(conversation_id=cid, run_id=run_id or state(cid)["run_id"],
                                  results=[{"call_id": call_id, "output": output}], persona=persona, now=clock())


def tools_with(*extra, keep=("lookup_order", "pick_date", "issue_refund")):
    return [t for t in SUPPORT_CONFIG["tools"] if t["name"] in keep] + list(extra)


def rules(*pairs):
    return {"provider": "scripted", "rules": [{"match": m, "steps": s} for m, s in pairs], "fallback": [{"say": "ok"}]}


class TestServerTools:
    def test_echo_returns_its_arguments_to_the_model(self, start):
        started = start("refund please")
        s = state(started["conversation_id"])
        approval = s["pending_client_actions"][0]

        assert approval["kind"] == "approval" and approval["tool"] == "issue_refund"
        echo = ActionLog.objects.get(conversation_id=started["conversation_id"], tool="lookup_order")
        assert echo.status == "succeeded" and echo.output == {"order_id": "A-1"}

    def test_a_failing_action_becomes_an_error_result_and_the_turn_still_replies(self, start, make_assistant):
        assistant = make_assistant(
            model=rules(("go", [{"call": "broken"}, {"say": "Tool said {result}"}])),
            tools=tools_with({"name": "broken", "kind": "server", "action": "fail"}),
        )

        started = start("go", assistant=assistant)

        reply = state(started["conversation_id"])["messages"][-1]["text"]
        assert reply == 'Tool said {"error": "broken failed"}'
        assert ActionLog.objects.get(tool="broken").status == "failed"

    def test_sleep_waits_the_requested_seconds(self, start, make_assistant):
        assistant = make_assistant(
            model=rules(("nap", [{"call": "nap", "arguments": {"seconds": 0.05}}, {"say": "{result}"}])),
            tools=tools_with({"name": "nap", "kind": "server", "action": "sleep"}),
        )

        started = start("nap", assistant=assistant)

        assert state(started["conversation_id"])["messages"][-1]["text"] == '{"slept": 0.05}'

    def test_a_webhook_is_signed_and_carries_its_idempotency_key(self, start, make_assistant, settings):
        settings.WAYPOINT_WEBHOOK_ALLOW_PRIVATE = True
        with Receiver() as receiver:
            assistant = make_assistant(
                model=rules(("pay", [{"call": "pay", "arguments": {"amount": 5}}, {"say": "Paid {result}"}])),
                tools=tools_with({"name": "pay", "kind": "server", "action": "webhook", "url": receiver.url}),
            )

            started = start("pay", assistant=assistant)

        [delivery] = receiver.deliveries
        body = delivery["body"]
        expected = "sha256=" + hmac.new(settings.WAYPOINT_WEBHOOK_SECRET.encode(), body, hashlib.sha256).hexdigest()
        assert delivery["headers"]["X-Waypoint-Signature"] == expected
        log = ActionLog.objects.get(tool="pay")
        assert delivery["headers"]["Idempotency-Key"] == f"{log.turn_id}:{log.call_id}" == log.idempotency_key
        assert json.loads(body)["arguments"] == {"amount": 5}
        assert state(started["conversation_id"])["messages"][-1]["text"] == 'Paid {"refund_id": "R-1"}'

    def test_a_webhook_to_a_private_address_is_refused_by_default(self, start, make_assistant, settings):
        settings.WAYPOINT_WEBHOOK_ALLOW_PRIVATE = False
        with Receiver() as receiver:
            assistant = make_assistant(
                model=rules(("pay", [{"call": "pay"}, {"say": "{result}"}])),
                tools=tools_with({"name": "pay", "kind": "server", "action": "webhook", "url": receiver.url}),
            )

            started = start("pay", assistant=assistant)

        assert receiver.deliveries == []
        assert "private address" in state(started["conversation_id"])["messages"][-1]["text"]


class TestApprovals:
    def test_approving_the_exact_call_runs_it_once(self, start, clock):
        started = start("refund please")
        cid = started["conversation_id"]
        call = state(cid)["pending_client_actions"][0]

        answer(cid, call["call_id"], {"decision": "approve", "reviewed": {"tool": call["tool"], "arguments": call["arguments"]}}, clock)

        refund = ActionLog.objects.filter(conversation_id=cid, tool="issue_refund")
        assert refund.count() == 1 and refund.get().status == "succeeded"
        assert state(cid)["messages"][-1]["text"] == 'Refund issued for {"amount": 20, "order_id": "A-1"}.'
        assert state(cid)["answered_client_actions"][0]["answered_by"] == "guest:alice"

    def test_changed_arguments_are_rejected_and_nothing_runs(self, start, clock):
        started = start("refund please")
        cid = started["conversation_id"]
        call = state(cid)["pending_client_actions"][0]
        head = state(cid)["seq"]

        with pytest.raises(ApprovalMismatch):
            answer(cid, call["call_id"], {"decision": "approve",
                                          "reviewed": {"tool": "issue_refund", "arguments": {"order_id": "A-1", "amount": 2000}}}, clock)

        assert not ActionLog.objects.filter(conversation_id=cid, tool="issue_refund").exists()
        assert state(cid)["seq"] == head and state(cid)["run_status"] == "waiting"

    def test_denying_gives_the_agent_a_denial_and_it_goes_on(self, start, clock):
        started = start("refund please")
        cid = started["conversation_id"]
        call = state(cid)["pending_client_actions"][0]

        answer(cid, call["call_id"], {"decision": "deny", "reviewed": {"tool": call["tool"], "arguments": call["arguments"]}}, clock)

        assert not ActionLog.objects.filter(conversation_id=cid, tool="issue_refund").exists()
        assert state(cid)["messages"][-1]["text"] == 'Refund issued for {"answered_by": "guest:alice", "denied": true}.'
        assert state(cid)["run_status"] == "completed"


class TestQuestions:
    def test_a_question_pauses_and_its_answer_reaches_the_model(self, start, make_assistant, clock):
        assistant = make_assistant(model=rules(("help", [
            {"call": "ask_question", "arguments": {"question": "Which order?"}}, {"say": "Looking at {result}"}])))
        started = start("help me", assistant=assistant)
        cid = started["conversation_id"]
        [call] = state(cid)["pending_client_actions"]

        answer(cid, call["call_id"], {"answer": "A-7"}, clock)

        assert call["kind"] == "question" and call["arguments"]["question"] == "Which order?"
        assert state(cid)["messages"][-1]["text"] == 'Looking at {"answer": "A-7"}'
        assert {"question_request", "question_response"} <= set(kinds(cid))


class TestResults:
    def test_twelve_concurrent_different_answers_accept_exactly_one(self, start):
        started = start("when?")
        cid = started["conversation_id"]
        s = state(cid)
        call_id = s["pending_client_actions"][0]["call_id"]
        barrier = threading.Barrier(12)
        outcomes = []

        def submit(i):
            barrier.wait()
            try:
                answers.accept_results(conversation_id=cid, run_id=s["run_id"],
                                       results=[{"call_id": call_id, "output": {"label": f"day {i}"}}],
                                       persona=f"guest:{i}", now=runner.timezone.now())
                outcomes.append(("accepted", i))
            except ActionResultConflict:
                outcomes.append(("conflict", i))
            finally:
                connection.close()

        threads = [threading.Thread(target=submit, args=(i,)) for i in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

        accepted = [i for what, i in outcomes if what == "accepted"]
        assert len(accepted) == 1 and len(outcomes) == 12
        assert kinds(cid).count("client_result_accepted") == 1
        assert state(cid)["messages"][-1]["text"] == f'Booked for {{"label": "day {accepted[0]}"}}.'


class TestBudget:
    def test_a_twelve_call_rule_ends_with_a_reply_within_nine_rounds(self, start, make_assistant):
        steps = [{"call": "lookup_order", "arguments": {"n": i}} for i in range(12)]
        assistant = make_assistant(model=rules(("loop", steps)))

        started = start("loop", assistant=assistant)

        s = state(started["conversation_id"])
        rounds = kinds(started["conversation_id"]).count("model_round")
        assert rounds <= 9 and s["run_status"] == "completed"
        assert s["messages"][-1]["text"].startswith("I could not finish this. I tried: lookup_order")

    def test_an_ingress_directive_lowers_the_budget(self, start, make_assistant):
        steps = [{"call": "lookup_order", "arguments": {"n": i}} for i in range(12)]
        assistant = make_assistant(model=rules(("loop", steps)))

        started = start("loop", assistant=assistant, directive={"step_budget": 2})

        assert kinds(started["conversation_id"]).count("model_round") == 3  # two rounds and the closing attempt

    def test_an_empty_closing_attempt_gives_the_fixed_fallback(self, start, make_assistant):
        # No rule and an empty fallback: the model produces no text, and neither does its closing attempt.
        assistant = make_assistant(model={"provider": "scripted", "rules": [], "fallback": []})

        started = start("anything", assistant=assistant)

        assert state(started["conversation_id"])["messages"][-1]["text"] == FALLBACK_REPLY


class TestCompletion:
    def test_an_allowed_final_complete_conversation_completes_it(self, start, clock):
        started = start("bye")

        s = state(started["conversation_id"])

        assert s["conversation_status"] == "completed" and s["completed_at"]
        assert kinds(started["conversation_id"])[-3:] == ["completion_requested", "turn_complete", "conversation_completed"]

    def test_a_disallowed_assistant_records_not_completed_and_stays_active(self, start, make_assistant):
        assistant = make_assistant(allow_conversation_completion=False)

        started = start("bye", assistant=assistant)

        s = state(started["conversation_id"])
        assert s["conversation_status"] == "active" and s["messages"][-1]["text"] == "Goodbye!"
        outcome = [e.payload["outcome"] for e in store.read(started["conversation_id"]) if e.kind == "completion_requested"]
        assert outcome == ["not_completed"]

    def test_a_premature_request_with_a_pending_client_action_is_not_completed(self, start, make_assistant, clock):
        assistant = make_assistant(model=rules(("bye", [
            {"calls": [{"call": "complete_conversation"}, {"call": "pick_date", "arguments": {"label": "x"}}]},
            {"say": "Done", "call": "complete_conversation"}])))
        started = start("bye", assistant=assistant)
        cid = started["conversation_id"]
        [call] = state(cid)["pending_client_actions"]

        answer(cid, call["call_id"], {"label": "today"}, clock)

        outcomes = [e.payload["outcome"] for e in store.read(cid) if e.kind == "completion_requested"]
        assert outcomes == ["not_completed", "completed"]
        assert state(cid)["conversation_status"] == "completed"

    def test_a_completed_conversation_refuses_turns_continue_and_results(self, start, clock):
        started = start("bye")
        cid = started["conversation_id"]

        with pytest.raises(ConversationIsCompleted):
            actions.start_turn(conversation_id=cid, message="hi", persona="guest:alice", edge="api", now=clock())
        with pytest.raises(ConversationIsCompleted):
            actions.continue_conversation(conversation_id=cid, persona="guest:alice", edge="api", now=clock())
        with pytest.raises(ConversationIsCompleted):
            answer(cid, "call_1_1", {"x": 1}, clock)
        assert replay(cid).ok


class TestSimpleRuns:
    def test_a_simple_runs_pending_call_expires(self, start, make_assistant, clock):
        assistant = make_assistant(mode="simple")
        started = start("when?", assistant=assistant)
        cid = started["conversation_id"]
        [call] = state(cid)["pending_client_actions"]

        expired = runner.expire_requests(now=runner.timezone.now() + timedelta(minutes=16))

        assert expired == 1 and state(cid)["run_status"] == "expired"
        with pytest.raises(RunExpired):
            answer(cid, call["call_id"], {"label": "late"}, clock)

    def test_an_agent_runs_pending_call_never_expires(self, start):
        started = start("when?")

        expired = runner.expire_requests(now=runner.timezone.now() + timedelta(days=30))

        assert expired == 0 and state(started["conversation_id"])["run_status"] == "waiting"


class TestOpenAIProvider:
    def _assistant(self, make_assistant, settings, base_url):
        settings.WAYPOINT_MODEL_RETRY_SECONDS = 0.01
        settings.WAYPOINT_OPENAI_BASE_URL = base_url  # the deployment's endpoint: its key goes nowhere else
        return make_assistant(model={"provider": "openai", "model": "gpt-4o-mini", "base_url": base_url})

    def test_a_tool_round_then_a_reply(self, start, make_assistant, settings):
        with wire.Vendor() as vendor:
            vendor.queue(
                wire.completion(tool_calls=[wire.tool_call("call_abc", "lookup_order", '{"order_id": "A-9"}')]),
                wire.completion(content="Order A-9 is on its way."),
            )
            assistant = self._assistant(make_assistant, settings, vendor.base_url)

            started = start("where is A-9?", assistant=assistant)

        s = state(started["conversation_id"])
        assert s["messages"][-1]["text"] == "Order A-9 is on its way."
        second = vendor.requests[1]["messages"]
        assert second[-1] == {"role": "tool", "tool_call_id": "call_abc", "content": '{"order_id": "A-9"}'}
        assert {t["function"]["name"] for t in vendor.requests[0]["tools"]} >= {"lookup_order", "complete_conversation"}
        from apps.runs.models import WorkflowLog

        assert WorkflowLog.objects.get(run_id=s["run_id"]).usage == {"prompt_tokens": 24, "completion_tokens": 10}

    def test_the_next_turn_carries_the_earlier_turns_tool_calls_and_results_as_replay_reads_them(
        self, start, make_assistant, settings, clock
    ):
        from apps.agent import history
        from apps.agent.providers import ModelRequest, openai_messages
        from apps.ledger import replay as ledger_replay
        from tests.core.logs import turn

        with wire.Vendor() as vendor:
            vendor.queue(
                wire.completion(tool_calls=[wire.tool_call("call_abc", "lookup_order", '{"order_id": "A-9"}')]),
                wire.completion(content="Order A-9 is on its way."),
                wire.completion(content="You asked about A-9."),
            )
            assistant = self._assistant(make_assistant, settings, vendor.base_url)
            cid = start("where is A-9?", assistant=assistant)["conversation_id"]
            turn(cid, "what did I ask?", clock)

        second_turn = vendor.requests[2]["messages"]
        assert second_turn == [
            {"role": "user", "content": "where is A-9?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_abc", "type": "function", "function": {"name": "lookup_order", "arguments": '{"order_id": "A-9"}'}}]},
            {"role": "tool", "tool_call_id": "call_abc", "content": '{"order_id": "A-9"}'},
            {"role": "assistant", "content": "Order A-9 is on its way."},
            {"role": "user", "content": "what did I ask?"},
        ]
        # Replay's read of the log gives the same history the runner sent.
        entries = ledger_replay._recorded(ledger_replay.stored_entries(cid))
        latest = state(cid)["turn_id"]
        told = openai_messages(ModelRequest(history=history.build(entries, exclude_turn=latest).turns,
                                            message="what did I ask?", rounds=[], tools=[]))
        assert told == second_turn

    def test_the_instructions_and_model_settings_reach_the_vendor(self, start, make_assistant, settings):
        with wire.Vendor() as vendor:
            vendor.queue(
                wire.completion(tool_calls=[wire.tool_call("call_abc", "lookup_order", '{"order_id": "A-9"}')]),
                wire.completion(content="On its way."),
            )
            settings.WAYPOINT_OPENAI_BASE_URL = vendor.base_url
            assistant = make_assistant(instructions="You are Acme's support agent.", model={
                "provider": "openai", "model": "gpt-4o-mini", "temperature": 0.1, "max_output_tokens": 50,
                "tool_choice": "lookup_order"})

            start("where is A-9?", assistant=assistant)

        first, second = vendor.requests
        assert first["messages"][0] == {"role": "system", "content": "You are Acme's support agent."}
        assert (first["temperature"], first["max_tokens"]) == (0.1, 50)
        assert first["tool_choice"] == {"type": "function", "function": {"name": "lookup_order"}}
        assert second["tool_choice"] == "auto" and second["messages"][0] == first["messages"][0]

    def test_a_vendor_slower_than_timeout_seconds_is_given_up_on(self, start, make_assistant, settings):
        settings.WAYPOINT_MODEL_RETRY_SECONDS = 0.01
        with wire.Vendor(delay_seconds=1.0) as vendor:
            vendor.queue(*[wire.completion(content="too late")] * 4)
            settings.WAYPOINT_OPENAI_BASE_URL = vendor.base_url
            assistant = make_assistant(model={"provider": "openai", "model": "gpt-4o-mini", "timeout_seconds": 0.2})

            started = start("hi", assistant=assistant)

        s = state(started["conversation_id"])
        assert s["run_status"] == "failed" and "APITimeoutError" in s["error"] and len(vendor.requests) == 4

    def test_malformed_tool_call_json_is_told_to_the_model(self, start, make_assistant, settings):
        with wire.Vendor() as vendor:
            vendor.queue(
                wire.completion(tool_calls=[wire.tool_call("call_bad", "lookup_order", '{"order_id": "A-')]),
                wire.completion(content="Sorry, let me try again later."),
            )
            assistant = self._assistant(make_assistant, settings, vendor.base_url)

            started = start("where?", assistant=assistant)

        tool_message = vendor.requests[1]["messages"][-1]
        assert "not valid JSON" in tool_message["content"]
        assert state(started["conversation_id"])["messages"][-1]["text"] == "Sorry, let me try again later."

    def test_a_vendor_500_is_retried(self, start, make_assistant, settings):
        with wire.Vendor() as vendor:
            vendor.queue(wire.error(500, "The server had an error", "server_error"), wire.completion(content="Hello!"))
            assistant = self._assistant(make_assistant, settings, vendor.base_url)

            started = start("hi", assistant=assistant)

        assert state(started["conversation_id"])["messages"][-1]["text"] == "Hello!" and len(vendor.requests) == 2

    def test_persistent_429s_fail_the_run_cleanly(self, start, make_assistant, settings):
        with wire.Vendor() as vendor:
            vendor.queue(*[wire.error(429, "Rate limit reached", "requests")] * 4)
            assistant = self._assistant(make_assistant, settings, vendor.base_url)

            started = start("hi", assistant=assistant)

        s = state(started["conversation_id"])
        assert s["run_status"] == "failed" and "unavailable" in s["error"]
        assert [m["role"] for m in s["messages"]] == ["user"] and len(vendor.requests) == 4
        assert replay(started["conversation_id"]).ok


def recorded(name):
    from tests.unit.test_openai_wire import payload

    record = payload(name)
    return record["status"], record["stream"] if "stream" in record else record["response"]


class TestRealServersAnswers:
    """Recorded answers of real servers (tests/fakes/payloads/) through a whole turn."""

    def _assistant(self, make_assistant, settings, vendor, **model):
        settings.WAYPOINT_MODEL_RETRY_SECONDS = 0.01
        settings.WAYPOINT_OPENAI_BASE_URL = vendor.base_url
        return make_assistant(model={"provider": "openai", "model": "smollm2", **model})

    def test_a_streamed_tool_call_runs_once_and_goes_back_under_the_vendors_id(self, start, make_assistant, settings):
        with wire.Vendor() as vendor:
            vendor.queue(recorded("llama_cpp_python_named_tool_stream"), recorded("llama_cpp_python_text_stream"))
            assistant = self._assistant(make_assistant, settings, vendor, stream=True)

            started = start("where is A-1?", assistant=assistant)

        [action] = ActionLog.objects.filter(conversation_id=started["conversation_id"])
        assert (action.call_id, action.tool, action.arguments, action.status) == ("call_1_1", "lookup_order", {"order_id": "A-1"}, "succeeded")
        calls, result = vendor.requests[1]["messages"][-2:]
        vendor_id = calls["tool_calls"][0]["id"]
        assert vendor_id.startswith("call__0_lookup_order_") and calls["content"] == ""
        assert result == {"role": "tool", "tool_call_id": vendor_id, "content": '{"order_id": "A-1"}'}
        assert state(started["conversation_id"])["messages"][-1]["text"].startswith("I'm sorry")
        assert replay(started["conversation_id"]).ok

    def test_the_same_vendor_id_in_two_rounds_is_two_calls(self, start, make_assistant, settings):
        with wire.Vendor() as vendor:
            vendor.queue(recorded("llama_cpp_python_named_tool"), recorded("llama_cpp_python_named_tool"),
                         recorded("llama_cpp_python_text"))
            assistant = self._assistant(make_assistant, settings, vendor)

            started = start("where is A-1?", assistant=assistant)

        calls = ActionLog.objects.filter(conversation_id=started["conversation_id"]).order_by("started_at")
        assert [(a.call_id, a.status) for a in calls] == [("call_1_1", "succeeded"), ("call_2_1", "succeeded")]
        assert state(started["conversation_id"])["run_status"] == "completed"

    def test_a_vendor_call_id_longer_than_the_call_id_column_is_no_database_error(self, start, make_assistant, settings):
        long_name = "lookup_order_" + "x" * 51  # as long as a tool name may be
        with wire.Vendor() as vendor:
            vendor.queue(recorded("llama_cpp_python_long_tool_name"), recorded("llama_cpp_python_text"))
            settings.WAYPOINT_OPENAI_BASE_URL = vendor.base_url
            assistant = make_assistant(model={"provider": "openai", "model": "smollm2"},
                                       tools=[{"name": long_name, "kind": "server", "action": "echo"}])

            started = start("where is A-1?", assistant=assistant)

        [action] = ActionLog.objects.filter(conversation_id=started["conversation_id"])
        assert (action.call_id, action.tool, action.status) == ("call_1_1", long_name, "succeeded")
        assert len(vendor.requests[1]["messages"][-1]["tool_call_id"]) > 100

    def test_an_overlong_unknown_tool_name_fails_that_call_and_the_model_is_told(self, start, make_assistant, settings):
        status, body = recorded("llama_cpp_python_named_tool")
        body["choices"][0]["message"]["tool_calls"][0]["function"]["name"] = "lookup_order" * 30
        with wire.Vendor() as vendor:
            vendor.queue((status, body), recorded("llama_cpp_python_text"))
            assistant = self._assistant(make_assistant, settings, vendor)

            started = start("where is A-1?", assistant=assistant)

        [action] = ActionLog.objects.filter(conversation_id=started["conversation_id"])
        assert action.status == "failed" and len(action.tool) <= 100 and action.error.startswith("unknown tool 'lookup_order")
        told = json.loads(vendor.requests[1]["messages"][-1]["content"])
        assert told["error"].startswith("unknown tool")
        assert state(started["conversation_id"])["run_status"] == "completed" and replay(started["conversation_id"]).ok

    def test_arguments_over_100_kb_never_reach_the_action(self, start, make_assistant, settings):
        status, body = recorded("llama_cpp_python_named_tool")
        body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = json.dumps({"order_id": "A" * 100_000})
        with wire.Vendor() as vendor:
            vendor.queue((status, body), recorded("llama_cpp_python_text"))
            assistant = self._assistant(make_assistant, settings, vendor)

            started = start("where is A-1?", assistant=assistant)

        [action] = ActionLog.objects.filter(conversation_id=started["conversation_id"])
        assert (action.action, action.status) == ("", "failed") and "longer than 100000 characters" in action.error
        assert "longer than 100000" in vendor.requests[1]["messages"][-1]["content"]

    def test_malformed_arguments_for_a_client_tool_fail_without_asking_anyone(self, start, make_assistant, settings):
        status, body = recorded("llama_cpp_python_named_tool")
        body["choices"][0]["message"]["tool_calls"][0]["function"].update(name="pick_date", arguments='{"label": ')
        with wire.Vendor() as vendor:
            vendor.queue((status, body), recorded("llama_cpp_python_text"))
            assistant = self._assistant(make_assistant, settings, vendor)

            started = start("when?", assistant=assistant)

        s = state(started["conversation_id"])
        assert s["run_status"] == "completed" and s["pending_client_actions"] == []
        assert "not valid JSON" in vendor.requests[1]["messages"][-1]["content"]
