"""The staff side of a handoff: the queue, the count in the navigation, Take over, Send reply, Hand back."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from apps.agent import actions, handoff
from apps.agent.state import conversation_state
from apps.conversations import queries
from apps.staff.queries.words import waited
from tests.conftest import SUPPORT_CONFIG

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


@pytest.fixture
def queued(start, make_assistant):
    """A conversation whose customer asked for a person."""
    cid = start("I want a refund", assistant=make_assistant(handoff={"enabled": True}))["conversation_id"]
    handoff.request_handoff(conversation_id=cid, source="customer", requested_by="guest:alice", reason="refund dispute",
                            now=timezone.now() - timedelta(minutes=4))
    return cid


def control(cid):
    return conversation_state(queries.conversation_for(cid))["control"]


def test_the_queue_lists_who_waits_oldest_first_and_the_navigation_counts_them(dana, queued, start, make_assistant):
    later = start("hello", assistant=make_assistant(handoff={"enabled": True}))["conversation_id"]
    handoff.request_handoff(conversation_id=later, source="application", requested_by="api:shop", now=timezone.now())

    page = dana.get("/staff/waiting/").content.decode()
    other_page = dana.get("/staff/assistants/").content.decode()

    assert page.index(f"waiting-{queued}") < page.index(f"waiting-{later}")
    assert "4 min" in page and "refund dispute" in page and "I want a refund" in page
    assert 'id="waiting-count" class="count" data-count="2"' in other_page
    assert "<title>(2) " in other_page


def test_the_count_alone_for_pages_without_a_live_fragment(dana, queued):
    count = dana.get("/staff/waiting/?count=1").content.decode()
    page = dana.get("/staff/assistants/").content.decode()

    assert count.strip().startswith('<span id="waiting-count" class="count" data-count="1" hx-swap-oob="true">')
    assert 'data-waiting-url="/staff/waiting/?count=1"' in page


def test_take_over_send_reply_and_hand_back(dana, queued):
    taken = dana.post(f"/staff/conversations/{queued}/take-over")
    holding = dana.get(f"/staff/conversations/{queued}/").content.decode()
    replied = dana.post(f"/staff/conversations/{queued}/reply", {"text": "Hi, Dana here."})
    back = dana.post(f"/staff/conversations/{queued}/hand-back", {"note": "refunded by phone"})

    assert taken.status_code == 302 and replied.status_code == 302 and back.status_code == 302
    assert ">Send reply</button>" in holding and ">Hand back to the assistant</button>" in holding
    state = conversation_state(queries.conversation_for(queued))
    assert state["messages"][-1]["author"] == {"kind": "staff", "id": "staff:dana", "name": "Dana"}
    assert state["control"]["mode"] == "agent"
    assert [c["text"] for c in state["control_changes"]][-1] == "refunded by phone"
    timeline = dana.get(f"/staff/conversations/{queued}/").content.decode()
    assert "Dana (staff:dana) took over" in timeline and "handed back to the assistant, note: refunded by phone" in timeline


def test_the_second_taker_is_told_in_words_who_has_it(dana, sam, queued):
    dana.post(f"/staff/conversations/{queued}/take-over")

    lost = sam.post(f"/staff/conversations/{queued}/take-over", headers={"HX-Request": "true"})
    page = sam.get(f"/staff/conversations/{queued}/").content.decode()

    assert lost.status_code == 409
    notice = lost.content.decode().split('id="control-notice"')[1].split("</div>")[0]
    assert 'role="alert">You did not take over: Dana already has this conversation.</p>' in notice
    assert "Dana already has this conversation." in page and ">Take over</button>" not in page
    assert ">Send reply</button>" not in page
    assert control(queued)["staff"] == {"id": "staff:dana", "name": "Dana"}


def test_without_htmx_the_refusal_is_the_pages_message_and_a_push_leaves_the_notice_alone(dana, sam, queued):
    dana.post(f"/staff/conversations/{queued}/take-over")

    lost = sam.post(f"/staff/conversations/{queued}/take-over", follow=True)
    pushed = sam.get(f"/staff/conversations/{queued}/live").content.decode()

    assert lost.status_code == 200
    assert "You did not take over: Dana already has this conversation." in lost.content.decode()
    # The pushes re-render #control; the notice lives beside it and only an answer to a press replaces it.
    assert 'id="control"' in pushed and 'id="control-notice"' not in pushed


def test_the_queue_says_who_asked_for_a_person(dana, queued, start, make_assistant):
    by_app = start("hello", assistant=make_assistant(handoff={"enabled": True}))["conversation_id"]
    handoff.request_handoff(conversation_id=by_app, source="application", requested_by="api:shop", now=timezone.now())

    page = dana.get("/staff/waiting/").content.decode()

    mine, theirs = page.split(f'id="waiting-{queued}"')[1], page.split(f'id="waiting-{by_app}"')[1]
    assert "The customer" in mine.split("</tr>")[0] and "guest:alice" in mine.split("</tr>")[0]
    assert "The application" in theirs.split("</tr>")[0] and "api:shop" in theirs.split("</tr>")[0]
    assert "no reason given" in theirs.split("</tr>")[0]


def test_only_the_holder_replies(dana, sam, queued):
    dana.post(f"/staff/conversations/{queued}/take-over")

    response = sam.post(f"/staff/conversations/{queued}/reply", {"text": "me too"}, headers={"HX-Request": "true"})

    assert response.status_code == 409
    assert "me too" not in [m["text"] for m in conversation_state(queries.conversation_for(queued))["messages"]]


def test_only_staff_may_take_over(queued, client):
    response = client.post(f"/staff/conversations/{queued}/take-over")

    assert response.status_code == 302 and "/staff/login/" in response["Location"]
    assert control(queued)["mode"] == "queued"


def test_the_timeline_says_each_change_of_control_with_who_and_why(dana, start, make_assistant):
    support = make_assistant(handoff={"enabled": True, "queue_timeout_seconds": 60}, model=SUPPORT_CONFIG["model"])
    cid = start("refund please", assistant=support)["conversation_id"]  # its run waits for the refund's approval
    pending = conversation_state(queries.conversation_for(cid))["pending_client_actions"][0]["call_id"]
    handoff.request_handoff(conversation_id=cid, source="customer", requested_by="guest:alice", reason="wants a human",
                            now=timezone.now())
    dana.post(f"/staff/conversations/{cid}/take-over")
    actions.start_turn(conversation_id=cid, message="are you there?", persona="guest:alice", edge="link", now=timezone.now())
    dana.post(f"/staff/conversations/{cid}/reply", {"text": "Yes, Dana here."})
    dana.post(f"/staff/conversations/{cid}/hand-back", {"note": "refund approved by phone"})
    unanswered = start("hello", assistant=support)["conversation_id"]
    asked = timezone.now() - timedelta(seconds=61)
    handoff.request_handoff(conversation_id=unanswered, source="application", requested_by="api:shop", now=asked)
    handoff.time_out_handoffs(now=timezone.now())

    timeline = dana.get(f"/staff/conversations/{cid}/").content.decode().split('id="timeline"')[1]
    timed_out = dana.get(f"/staff/conversations/{unanswered}/").content.decode().split('id="timeline"')[1]

    said = {kind: timeline.split(f'<span class="kind">{kind}</span>')[1].split("</summary>")[0]
            for kind in ("handoff_requested", "turn_handed_off", "control_taken", "customer_message", "staff_message",
                         "control_returned")}
    assert "asked for by the customer (guest:alice): wants a human" in said["handoff_requested"]
    assert f"withdrew {pending}" in said["turn_handed_off"]
    assert "Dana (staff:dana) took over" in said["control_taken"]
    assert "“are you there?” via link, no run" in said["customer_message"]
    assert "Dana: “Yes, Dana here.”" in said["staff_message"]
    assert "Dana (staff:dana) handed back to the assistant, note: refund approved by phone" in said["control_returned"]
    assert "nobody took it within 60 s: back to the assistant" in timed_out.split('<span class="kind">handoff_timed_out</span>')[1]


@pytest.mark.parametrize(("method", "path", "data"), [
    ("post", "take-over", {}), ("post", "reply", {"text": "hi"}), ("post", "hand-back", {}), ("get", "", {})])
def test_a_logged_in_user_who_is_not_staff_is_refused(queued, method, path, data):
    user = get_user_model().objects.create_user("cust", "cust@example.com", "pw", is_staff=False)
    client = Client()
    client.force_login(user)

    response = getattr(client, method)(f"/staff/conversations/{queued}/{path}", data)
    queue = client.get("/staff/waiting/")

    assert response.status_code == 403 and queue.status_code == 403
    assert control(queued)["mode"] == "queued"
    assert "refund dispute" not in queue.content.decode()


@pytest.mark.parametrize(("seconds", "said"), [(3, "just now"), (42, "42 s"), (300, "5 min"), (3900, "1 h 5 min")])
def test_how_long_someone_waited_reads_as_people_say_it(seconds, said):
    assert waited(timedelta(seconds=seconds)) == said
