import json
import re
from datetime import UTC, datetime

import pytest

from apps.agent import actions, answers
from apps.agent.state import conversation_state
from apps.conversations import queries
from apps.widget import pushes
from tests.widget.conftest import enabled_inputs

pytestmark = pytest.mark.django_db


def state_of(started: dict) -> dict:
    return conversation_state(queries.conversation_for(started["conversation_id"]))


class TestCards:
    def test_an_approval_card_shows_the_tool_and_its_exact_arguments(self, page, started):
        conversation = started("I want a refund")

        html = page(conversation).content.decode()

        assert 'class="card approval"' in html
        assert "<code>issue_refund</code>" in html
        assert json.dumps({"amount": 20, "order_id": "A-1"}, indent=2, sort_keys=True).replace('"', "&quot;") in html
        assert ">Approve</button>" in html and ">Deny</button>" in html

    def test_a_paused_turn_shows_its_card_and_no_reply_text(self, page, started):
        conversation = started("I want a refund")

        html = page(conversation).content.decode()

        assert html.count('class="message assistant"') == 0
        assert 'id="call-' in html

    def test_an_answered_approval_says_who_answered(self, page, started, answer, settle):
        conversation = started("I want a refund")
        paused = state_of(conversation)
        with settle():
            answer(conversation, paused, decision="approve", reviewed_tool="issue_refund",
                   reviewed_arguments=json.dumps(paused["pending_client_actions"][0]["arguments"]))

        html = page(conversation).content.decode()

        assert "Approved" in html and re.search(r'class="by chip"><span class="visually-hidden">by </span>You<', html)

    def test_a_question_card_has_an_answer_field_and_submit(self, page, make_assistant, started):
        assistant = make_assistant(model={"provider": "scripted", "rules": [
            {"match": "help", "steps": [{"call": "ask_question", "arguments": {"question": "Which order?"}}, {"say": "Thanks: {result}"}]}]})
        conversation = started("help", assistant=assistant)

        html = page(conversation).content.decode()

        assert "Which order?" in html and 'name="answer"' in html and ">Submit</button>" in html

    def test_a_client_tool_card_is_a_form_from_its_parameters(self, page, started, answer, settle):
        conversation = started("when can you deliver?")
        html = page(conversation).content.decode()
        with settle():
            answer(conversation, state_of(conversation), **{"field.label": "2026-12-24"})

        assert 'name="field.label"' in html and ">Submit</button>" in html
        assert state_of(conversation)["messages"][-1]["text"] == 'Booked for {"label": "2026-12-24"}.'

    def test_a_tool_the_application_answers_shows_that_it_waits_for_it(self, page, make_assistant, started):
        assistant = make_assistant(tools=[
            {"name": "lookup_order", "kind": "server", "action": "echo"},
            {"name": "issue_refund", "kind": "server", "action": "echo", "requires_approval": True},
            {"name": "pick_date", "kind": "client", "answered_by": "application", "description": "Pick a date in the app"},
        ])
        conversation = started("when can you deliver?", assistant=assistant)

        html = page(conversation).content.decode()

        assert "Waiting for the application…" in html
        assert ">Submit</button>" not in html

    def test_a_second_different_answer_shows_the_accepted_one_instead_of_an_error(self, started, answer, settle):
        conversation = started("when can you deliver?")
        paused = state_of(conversation)
        with settle():
            answer(conversation, paused, **{"field.label": "2026-12-24"})

        response = answer(conversation, paused, **{"field.label": "2027-01-01"})

        html = response.content.decode()
        assert response.status_code == 409
        assert "Someone else already answered" in html and "2026-12-24" in html

    def test_the_conflict_reaches_an_htmx_page_as_a_fragment(self, started, answer, settle):
        conversation = started("when can you deliver?")
        paused = state_of(conversation)
        with settle():
            answer(conversation, paused, **{"field.label": "2026-12-24"})

        response = answer(conversation, paused, htmx=True, **{"field.label": "2027-01-01"})

        html = response.content.decode()
        assert '<div id="notices" hx-swap-oob="true"' in html and "Someone else already answered" in html
        assert "<html" not in html


class TestReadOnly:
    def test_a_completed_conversation_says_so_and_has_no_enabled_input(self, page, started, clock, settle):
        conversation = started("hello")
        with settle():
            actions.start_turn(conversation_id=conversation["conversation_id"], message="bye", persona="guest:alice", edge="link", now=clock())

        html = page(conversation).content.decode()

        assert "This conversation is complete" in html
        assert enabled_inputs(html) == []

    def test_sending_to_a_completed_conversation_explains_instead_of_failing(self, client, started, clock, settle):
        conversation = started("bye")

        response = client.post(f"/c/{conversation['conversation_id']}/send", {"token": conversation["token"], "message": "hi again"})

        assert response.status_code == 409
        assert "This conversation is complete" in response.content.decode()


class TestLivePath:
    def test_polling_answers_not_modified_while_nothing_changed(self, client, started):
        conversation = started("hello")
        url = f"/c/{conversation['conversation_id']}/live?token={conversation['token']}"
        first = client.get(url)

        again = client.get(url, headers={"If-None-Match": first["ETag"]})

        assert first.status_code == 200 and again.status_code == 304

    def test_a_poll_carries_the_fragments_by_their_ids(self, client, started):
        conversation = started("I want a refund")

        html = client.get(f"/c/{conversation['conversation_id']}/live", {"token": conversation["token"]}).content.decode()

        for fragment in ("status", "transcript", "cards"):
            assert f'id="{fragment}" hx-swap-oob="true"' in html

    def test_another_conversations_token_sees_nothing(self, client, started):
        one, two = started("hello"), started("hi")

        response = client.get(f"/c/{one['conversation_id']}", {"token": two["token"]})

        assert response.status_code == 404


class TestMessageText:
    def test_html_in_a_message_is_shown_as_text_and_never_as_markup(self, page, started):
        conversation = started('<script>alert(1)</script> <img src=x onerror=alert(2)> [x](javascript:alert(3))')

        html = page(conversation).content.decode()

        assert "<script>alert" not in html and "<img" not in html and 'href="javascript:' not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


class TestStaleCards:
    def test_the_same_answer_from_a_stale_card_says_it_was_already_given_and_nothing_failed(self, started, answer, settle):
        conversation = started("when can you deliver?")
        paused = state_of(conversation)
        with settle():
            answer(conversation, paused, **{"field.label": "2026-12-24"})

        response = answer(conversation, paused, **{"field.label": "2026-12-24"})

        notice = _notice(response.content.decode())
        assert response.status_code == 200
        assert "<h2>Already answered</h2>" in notice
        assert "“Delivery date” was already answered in another window: <strong>2026-12-24</strong>, as you answered." in notice
        assert "There is nothing more to do." in notice
        assert "Someone else" not in notice and "not applied" not in notice

    def test_the_same_approval_from_a_second_window_says_already_approved_there(self, started, answer, settle):
        conversation = started("I want a refund")
        paused = state_of(conversation)
        approval = {"decision": "approve", "reviewed_tool": "issue_refund",
                    "reviewed_arguments": json.dumps(paused["pending_client_actions"][0]["arguments"])}
        with settle():
            answer(conversation, paused, **approval)

        notice = _notice(answer(conversation, paused, htmx=True, **approval).content.decode())

        assert 'role="status"' in notice and "<h2>Already approved</h2>" in notice
        assert "was already approved in another window. There is nothing more to do." in notice
        assert "by you" not in notice and "Someone else" not in notice and "not applied" not in notice


    def test_the_notice_names_the_card_and_whose_answer_counts_in_words(self, started, answer, settle):
        conversation = started("when can you deliver?")
        paused = state_of(conversation)
        with settle():
            answer(conversation, paused, **{"field.label": "2026-12-24"})

        html = answer(conversation, paused, **{"field.label": "2027-01-01"}).content.decode()

        notice = _notice(html)
        assert "Someone else already answered" in notice
        assert "The accepted answer to “Delivery date” is <strong>2026-12-24</strong>, given in another window." in notice
        assert "by you" not in notice  # the same link's other tab answered first: not "someone else … you"
        assert "pick_date" not in notice and "guest:" not in notice


def _notice(html: str) -> str:
    """The notice the person whose answer did not count is shown."""
    notice = html[html.index('class="card conflict'):]
    return notice[:notice.index("</div>")]

DATE_TOOL = {"name": "pick_date", "kind": "client", "parameters": {"type": "object", "properties": {
    "date": {"type": "string", "format": "date", "title": "Delivery date", "minimum": "2026-12-01", "maximum": "2026-12-31"}}}}
DECLINING = {"provider": "scripted", "rules": [
    {"match": "help", "steps": [{"call": "ask_question", "arguments": {"question": "Which order?"}},
                                {"when": "declined", "say": "Skipped."}, {"say": "Thanks: {result.answer}"}]},
    {"match": "when", "steps": [{"call": "pick_date"}, {"when": "declined", "say": "Cancelled."}, {"say": "Booked {result.date}"}]}]}


class TestDecliningCards:
    def test_skip_on_a_question_records_a_declined_answer_the_model_sees(self, page, make_assistant, started, answer, settle):
        conversation = started("help", assistant=make_assistant(model=DECLINING))
        html = page(conversation).content.decode()

        with settle():
            response = answer(conversation, state_of(conversation), declined="1")

        assert 'name="declined" value="1"' in html and ">Skip</button>" in html
        assert response.status_code == 302
        after = state_of(conversation)
        assert after["messages"][-1]["text"] == "Skipped." and after["answered_client_actions"][0]["output"] == {"declined": True}
        assert "Skipped" in page(conversation).content.decode()

    def test_cancel_on_a_client_form_declines_it_whatever_its_fields_hold(self, page, make_assistant, started, answer, settle):
        conversation = started("when?", assistant=make_assistant(model=DECLINING, tools=[DATE_TOOL]))
        html = page(conversation).content.decode()

        with settle():
            answer(conversation, state_of(conversation), declined="1", **{"field.date": ""})

        assert ">Cancel</button>" in html and "formnovalidate" in html
        assert state_of(conversation)["messages"][-1]["text"] == "Cancelled."
        assert "Cancelled" in page(conversation).content.decode()

    def test_a_date_field_carries_its_bounds(self, page, make_assistant, started):
        conversation = started("when?", assistant=make_assistant(model=DECLINING, tools=[DATE_TOOL]))

        html = page(conversation).content.decode()

        assert 'type="date" min="2026-12-01" max="2026-12-31" required' in html

    def test_a_today_bound_is_the_date_the_card_is_shown(self, page, make_assistant, started):
        tool = {**DATE_TOOL, "parameters": {"type": "object", "properties": {
            "date": {"type": "string", "format": "date", "title": "Delivery date", "minimum": "today"}}}}
        conversation = started("when?", assistant=make_assistant(model=DECLINING, tools=[tool]))

        html = page(conversation).content.decode()

        assert f'type="date" min="{datetime.now(UTC).date().isoformat()}" required' in html

    def test_a_date_outside_its_bounds_is_refused_with_a_message_for_people(self, page, make_assistant, started, answer):
        conversation = started("when?", assistant=make_assistant(model=DECLINING, tools=[DATE_TOOL]))

        response = answer(conversation, state_of(conversation), **{"field.date": "2027-01-05"})

        assert response.status_code == 422
        assert "Delivery date must be on or before 2026-12-31" in response.content.decode()
        assert state_of(conversation)["run_status"] == "waiting"


WORDED_TOOLS = [
    {"name": "lookup_order", "kind": "server", "action": "echo", "summary": "Looking up your order {order_id}",
     "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}},
    {"name": "issue_refund", "kind": "server", "action": "echo", "requires_approval": True, "display_name": "Refund",
     "summary": "Refund {amount} for order {order_id}",
     "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}}}},
    {"name": "pick_date", "kind": "client", "parameters": {"type": "object", "properties": {"label": {"type": "string"}}}},
]


class TestWords:
    def test_an_approval_card_asks_the_summary_and_keeps_the_exact_arguments_under_details(self, page, make_assistant, started):
        conversation = started("I want a refund", assistant=make_assistant(tools=WORDED_TOOLS))

        html = page(conversation).content.decode()

        card = html[html.index('class="card approval"'):html.index("</form>", html.index('class="card approval"'))]
        assert ">Shall I refund 20 for order A-1?</h2>" in card
        details = card[card.index("<details"):card.index("</details>")]
        assert "<summary>Details</summary>" in details and "<code>issue_refund</code>" in details
        assert json.dumps({"amount": 20, "order_id": "A-1"}, indent=2, sort_keys=True).replace('"', "&quot;") in details
        assert 'name="reviewed_arguments" value="{&quot;amount&quot;: 20, &quot;order_id&quot;: &quot;A-1&quot;}"' in card

    def test_the_status_line_says_whose_turn_it_is_in_words(self, page, make_assistant, started):
        conversation = started("I want a refund", assistant=make_assistant(tools=WORDED_TOOLS))

        html = page(conversation).content.decode()

        assert "Waiting for your approval…" in html and "Waiting for approval of issue_refund" not in html

    def test_a_receipt_uses_the_summary_and_says_you_for_the_viewer(self, page, make_assistant, started, answer, settle):
        conversation = started("I want a refund", assistant=make_assistant(tools=WORDED_TOOLS))
        paused = state_of(conversation)
        with settle():
            answer(conversation, paused, decision="deny", reviewed_tool="issue_refund",
                   reviewed_arguments=json.dumps(paused["pending_client_actions"][0]["arguments"]))

        html = page(conversation).content.decode()

        receipt = html[html.index('class="receipt denied"'):]
        assert '<span class="answered-title">Refund 20 for order A-1</span>' in receipt
        assert "<strong class=\"answer\">Denied</strong>" in receipt and ">You</span>" in receipt

    def test_a_receipt_names_another_persona_who_answered(self, page, make_assistant, started, clock, settle):
        conversation = started("I want a refund", assistant=make_assistant(tools=WORDED_TOOLS))
        paused = state_of(conversation)
        call = paused["pending_client_actions"][0]
        with settle():
            answers.accept_results(conversation_id=conversation["conversation_id"], run_id=paused["run_id"], persona="shop:boss",
                                   results=[{"call_id": call["call_id"], "output": {
                                       "decision": "approve", "reviewed": {"tool": call["tool"], "arguments": call["arguments"]}}}],
                                   now=clock())

        html = page(conversation).content.decode()

        assert '<span class="visually-hidden">by </span>boss</span>' in html and "shop:boss" not in html

    def test_an_answer_after_someone_skipped_the_question_says_it_was_skipped(self, make_assistant, started, answer, settle):
        conversation = started("help", assistant=make_assistant(model=DECLINING))
        paused = state_of(conversation)
        with settle():
            answer(conversation, paused, declined="1")

        response = answer(conversation, paused, htmx=True, answer="A-1")

        assert response.status_code == 409
        assert "Someone else already answered" in response.content.decode() and "<strong>Skipped</strong>" in response.content.decode()


def _approve(conversation: dict, answer, settle, decision: str = "approve") -> None:
    paused = state_of(conversation)
    with settle():
        answer(conversation, paused, decision=decision, reviewed_tool="issue_refund",
               reviewed_arguments=json.dumps(paused["pending_client_actions"][0]["arguments"]))


def _blocks(html: str) -> list[str]:
    """The transcript's blocks by id, in the order the page shows them."""
    start = html.index('<div id="transcript"')
    end = html.find('<section id="cards"', start)
    transcript = html[start:end if end > 0 else None]
    return re.findall(r'<div id="((?:message|receipt)-[^"]+)"', transcript)


class TestReceipts:
    def test_an_earlier_turns_approval_stays_in_the_transcript_between_its_messages(self, page, make_assistant, started,
                                                                                   answer, settle, clock):
        conversation = started("I want a refund", assistant=make_assistant(tools=WORDED_TOOLS))
        _approve(conversation, answer, settle)
        with settle():
            actions.start_turn(conversation_id=conversation["conversation_id"], message="thanks", persona="guest:alice",
                               edge="link", now=clock())

        html = page(conversation).content.decode()

        blocks = _blocks(html)
        assert [b.split("-")[0] for b in blocks] == ["message", "receipt", "message", "message", "message"]
        receipt = html[html.index(f'<div id="{blocks[1]}"'):]
        receipt = receipt[:receipt.index("</p>")]
        assert 'class="receipt approved"' in receipt
        assert '<span class="answered-title">Refund 20 for order A-1</span>' in receipt
        assert '<strong class="answer">Approved</strong>' in receipt and ">You</span>" in receipt

    def test_every_turns_answers_are_receipts_in_log_order(self, page, make_assistant, started, answer, settle, clock):
        conversation = started("I want a refund", assistant=make_assistant(tools=WORDED_TOOLS))
        _approve(conversation, answer, settle)
        with settle():
            actions.start_turn(conversation_id=conversation["conversation_id"], message="another refund", persona="guest:alice",
                               edge="link", now=clock())
        _approve(conversation, answer, settle, decision="deny")

        html = page(conversation).content.decode()

        receipts = [b for b in _blocks(html) if b.startswith("receipt-")]
        assert len(receipts) == 2
        assert html.index('class="receipt approved"') < html.index('class="receipt denied"') < html.index('<section id="cards"')

    def test_an_answer_is_pushed_once_as_a_receipt_and_a_whole_state_renders_the_same(self, make_assistant, started,
                                                                                     answer, settle, clock):
        conversation = started("I want a refund", assistant=make_assistant(tools=WORDED_TOOLS))
        record = queries.conversation_for(conversation["conversation_id"])
        viewer = pushes.Viewer(token=conversation["token"], persona="guest:alice", permissions=frozenset({"view", "write"}), embed=None)
        load = lambda: queries.conversation_for(conversation["conversation_id"])  # noqa: E731
        first = pushes.html(conversation["conversation_id"], viewer=viewer, since=None, announced=record.head_seq, load=load)
        _approve(conversation, answer, settle)
        head = queries.conversation_for(conversation["conversation_id"]).head_seq

        after_answer = pushes.html(conversation["conversation_id"], viewer=viewer, since=first.shown, announced=head, load=load)
        with settle():
            actions.start_turn(conversation_id=conversation["conversation_id"], message="thanks", persona="guest:alice",
                               edge="link", now=clock())
        later = queries.conversation_for(conversation["conversation_id"]).head_seq
        next_turn = pushes.html(conversation["conversation_id"], viewer=viewer, since=after_answer.shown, announced=later, load=load)
        whole = pushes.html(conversation["conversation_id"], viewer=viewer, since=None, announced=later, load=load)

        pushed = [b for b in _blocks(after_answer.text) if b.startswith("receipt-")]
        assert len(pushed) == 1 and not [b for b in _blocks(first.text) if b.startswith("receipt-")]
        assert not [b for b in _blocks(next_turn.text) if b.startswith("receipt-")]
        receipt = re.search(rf'<div id="{pushed[0]}".*?</div>', after_answer.text, re.S)[0]
        assert receipt in whole.text
        assert _blocks(whole.text).index(pushed[0]) == 1
