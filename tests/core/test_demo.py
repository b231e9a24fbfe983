"""The demo assistant of `make run`: scripted by default, or the same agent on a real model."""

import pytest
from django.core.management import call_command

from apps.actions.models import ActionLog
from apps.agent import actions, history, tools, turns
from apps.agent.actions import load_demo
from apps.agent.demo import DEMO_INSTRUCTIONS
from apps.agent.models import Assistant
from apps.agent.providers import ModelRequest, provider_for
from apps.agent.state import conversation_state
from apps.conversations import queries
from apps.conversations.errors import BadInput
from apps.ledger import store
from apps.ledger.replay import replay
from tests.core.logs import answer, approve, turn
from tests.core.test_agent_loop import recorded
from tests.fakes import vendor as wire
from tests.fakes.receiver import Receiver

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


class TestTheDemo:
    def test_is_scripted_and_has_instructions_by_default(self):
        config = load_demo(base_url="http://127.0.0.1:8000").config

        assert config["model"]["provider"] == "scripted" and config["instructions"] == DEMO_INSTRUCTIONS

    def test_a_model_name_puts_the_same_agent_on_the_deployments_endpoint(self, settings, clock):
        with wire.Vendor() as vendor:
            settings.WAYPOINT_OPENAI_BASE_URL = vendor.base_url
            vendor.queue(recorded("llama_cpp_python_named_tool_stream"), recorded("llama_cpp_python_text_stream"))
            demo = load_demo(base_url="http://127.0.0.1:8000", model="llama3.2")

            started = actions.start_conversation(assistant_id=str(demo.id), message="Where is my order A-1?",
                                                 persona="guest:alice", edge="api", now=clock())

        first = vendor.requests[0]
        assert (first["model"], first["stream"]) == ("llama3.2", True)
        assert first["messages"][0] == {"role": "system", "content": DEMO_INSTRUCTIONS}
        assert {"lookup_order", "issue_refund", "pick_date"} <= {t["function"]["name"] for t in first["tools"]}
        assert ActionLog.objects.get(conversation_id=started["conversation_id"]).tool == "lookup_order"
        state = conversation_state(queries.conversation_for(started["conversation_id"]))
        assert state["run_status"] == "completed"

    def test_the_command_takes_the_model_from_the_environment_setting(self, settings, capsys):
        settings.WAYPOINT_OPENAI_BASE_URL = "http://127.0.0.1:11434/v1"
        settings.WAYPOINT_DEMO_MODEL = "llama3.2"

        call_command("load_demo", "--base-url", "http://127.0.0.1:8000")

        assert Assistant.objects.get(is_demo=True).config["model"]["model"] == "llama3.2"
        assert "model 'llama3.2' at http://127.0.0.1:11434/v1" in capsys.readouterr().out


def demo_conversation(settings, clock, message: str, *, hook: str = "http://127.0.0.1:9/demo/hooks/refund") -> str:
    settings.WAYPOINT_WEBHOOK_ALLOW_PRIVATE = True
    demo = load_demo(base_url="http://127.0.0.1:8000")
    demo.config["tools"] = [{**t, "url": hook} if t["name"] == "issue_refund" else t for t in demo.config["tools"]]
    demo.save(update_fields=["config"])
    started = actions.start_conversation(assistant_id=str(demo.id), message=message, persona="guest:alice", edge="api", now=clock())
    return started["conversation_id"]


def reply(cid: str) -> str:
    return conversation_state(queries.conversation_for(cid))["messages"][-1]["text"]


def rounds_again(cid: str) -> list[tuple[str, list]]:
    """Ask the scripted model again for every round the log recorded, from the history the log gives it."""
    config = queries.conversation_for(cid).assistant.config
    provider = provider_for(config)
    entries = store.read(cid)
    out = []
    for turn_id in dict.fromkeys(e.turn_id for e in entries if e.kind == "turn_dispatched"):
        earlier = history.build(entries, exclude_turn=turn_id)
        events = [e for e in entries if e.turn_id == turn_id]
        for position, entry in enumerate(events):
            if entry.kind != "model_round" or entry.payload.get("closing"):
                continue
            state = turns.turn_state(events[:position])
            answer = provider.complete(ModelRequest(history=earlier.turns, message=state.message, rounds=turns.past_rounds(state),
                                                    tools=config["tools"], continuation=state.continuation))
            out.append(((answer.text, [c.as_dict() for c in answer.calls]), (entry.payload["text"], entry.payload["calls"])))
    return out


class TestTheDemoTellsTheTruth:
    def test_after_deny_it_says_the_refund_was_declined(self, settings, clock):
        cid = demo_conversation(settings, clock, "I want a refund")

        approve(cid, clock, decision="deny")

        assert reply(cid) == "The refund was declined, so nothing was refunded for order A-1."
        assert not ActionLog.objects.filter(conversation_id=cid, tool="issue_refund").exists()

    def test_after_approve_it_says_the_refund_was_issued(self, settings, clock):
        with Receiver() as shop:
            cid = demo_conversation(settings, clock, "I want a refund", hook=shop.url)

            approve(cid, clock)

        assert reply(cid) == "Refund issued: $20 for order A-1." and len(shop.deliveries) == 1

    def test_when_the_shop_fails_it_says_nothing_was_refunded(self, settings, clock):
        with Receiver(status=500) as shop:
            cid = demo_conversation(settings, clock, "I want a refund", hook=shop.url)

            approve(cid, clock)

        assert reply(cid) == ("The refund could not be issued just now (webhook answered 500). "
                              "Nothing was refunded; please try again later.")

    def test_no_reply_shows_raw_json(self, settings, clock):
        cid = demo_conversation(settings, clock, "Where is my order?")
        turn(cid, "When can you deliver?", clock)
        answer(cid, {"date": "2026-12-24"}, clock)
        turn(cid, "I need help", clock)
        answer(cid, {"answer": "order A-1"}, clock)

        texts = [m["text"] for m in conversation_state(queries.conversation_for(cid))["messages"] if m["role"] == "assistant"]

        assert texts == ["Your order A-1 is on its way.", "Booked for 2026-12-24.", "Thanks, I will look into order A-1."]
        assert not any("{" in text for text in texts)

    def test_a_delivery_date_in_the_past_is_refused(self, settings, clock):
        cid = demo_conversation(settings, clock, "When can you deliver?")

        with pytest.raises(BadInput, match="Delivery date must be today or later"):
            answer(cid, {"date": "2001-01-01"}, clock)

        [call] = conversation_state(queries.conversation_for(cid))["pending_client_actions"]
        assert call["tool"] == "pick_date"

    def test_the_echo_adds_no_punctuation_after_the_message(self, settings, clock):
        cid = demo_conversation(settings, clock, "are you there?")

        assert reply(cid).startswith("You said: are you there?\n\nTry asking")

    def test_a_refund_names_its_currency_on_the_card_and_in_the_reply(self, settings, clock):
        with Receiver() as shop:
            cid = demo_conversation(settings, clock, "I want a refund", hook=shop.url)
            [call] = conversation_state(queries.conversation_for(cid))["pending_client_actions"]
            refund = next(t for t in queries.conversation_for(cid).assistant.config["tools"] if t["name"] == "issue_refund")
            worded = tools.summary(refund, call["arguments"])

            approve(cid, clock)

        assert worded == "Refund $20 for order A-1"
        assert reply(cid) == "Refund issued: $20 for order A-1."

    def test_a_branched_conversation_replays_and_the_model_answers_the_same_from_its_history(self, settings, clock):
        cid = demo_conversation(settings, clock, "I want a refund")
        approve(cid, clock, decision="deny")
        turn(cid, "When can you deliver?", clock)
        answer(cid, {"declined": True}, clock)

        again = rounds_again(cid)

        assert replay(cid).ok
        assert [recorded for recorded, _ in again] == [recorded for _, recorded in again] and len(again) == 5
        assert reply(cid) == "No problem: no delivery date is booked. Ask again whenever you like."
