"""A tool's words for people (apps/agent/tools.py) and a persona's name on a page."""

from __future__ import annotations

from datetime import date

import pytest

from apps.agent import tools
from apps.ledger.identities import persona_name
from apps.widget import presenters

REFUND = {"name": "issue_refund", "display_name": "Refund", "summary": "Refund {amount} for order {order_id}"}


class TestSummary:
    def test_fills_the_template_with_the_calls_arguments(self):
        assert tools.summary(REFUND, {"amount": 20, "order_id": "A-1"}) == "Refund 20 for order A-1"

    def test_an_argument_the_call_lacks_reads_as_an_ellipsis(self):
        assert tools.summary(REFUND, {"amount": 20.5}) == "Refund 20.5 for order …"

    @pytest.mark.parametrize("template", ["Refund {amount", "Refund }", "{amount[}"])
    def test_a_stored_template_that_does_not_parse_gives_nothing_and_never_raises(self, template):
        assert tools.summary({"summary": template}, {"amount": 1}) == ""

    def test_arguments_that_are_no_object_give_ellipses(self):
        assert tools.summary(REFUND, "not an object") == "Refund … for order …"

    def test_escaped_braces_stay_braces(self):
        assert tools.summary({"summary": "{{literal}} {x}"}, {"x": True}) == "{literal} yes"


class TestDisplayName:
    def test_is_the_display_name_else_the_name_in_words(self):
        assert (tools.display_name(REFUND, "issue_refund"), tools.display_name({}, "issue_refund")) == ("Refund", "Issue refund")

    def test_a_given_display_name_is_kept_as_written(self):
        assert tools.display_name({"display_name": "eSIM activation"}, "activate_esim") == "eSIM activation"


class TestProgressPhrase:
    def test_with_known_arguments_is_the_filled_summary(self):
        tool = {"summary": "Looking up your order {order_id}"}

        assert tools.progress_phrase(tool, "lookup_order", {"order_id": "A-1"}) == "Looking up your order A-1…"

    def test_without_arguments_drops_the_placeholders(self):
        assert tools.progress_phrase({"summary": "Looking up your order {order_id}"}, "lookup_order") == "Looking up your order…"

    def test_without_a_summary_is_the_display_name(self):
        assert tools.progress_phrase({"display_name": "Order lookup"}, "lookup_order") == "Order lookup…"

    def test_without_a_display_name_is_the_name_in_words(self):
        assert tools.progress_phrase({}, "issue_refund") == "Issue refund…"


class TestOneNameEverywhere:
    """A tool without display_name or summary is called the same on every surface a person sees."""

    CALL = {"call_id": "call_1", "kind": "approval", "tool": "issue_refund", "arguments": {"order_id": "A-1"}}
    CONFIG = {"tools": [{"name": "issue_refund", "kind": "server", "action": "echo", "requires_approval": True}]}

    def test_the_card_the_receipt_the_progress_line_the_interruption_and_the_conflict_notice_agree(self):
        by_name = {t["name"]: t for t in self.CONFIG["tools"]}
        state = {"pending_client_actions": [], "answered_client_actions": [], "receipts": [], "messages": [],
                 "run_status": "running", "conversation_status": "active", "run_id": "run_1",
                 "progress": [{"text": "Using issue_refund", "at": "", "seq": 3}],
                 "tool_summary": [{"tool": "issue_refund", "kind": "server", "state": "ambiguous"}],
                 "control": {"mode": "agent", "staff": None, "requested_at": None, "since": "", "reason": None}}

        card = presenters.page_state({**state, "pending_client_actions": [dict(self.CALL)]}, self.CONFIG)
        receipt = presenters.page_state({**state, "receipts": [
            {**self.CALL, "run_id": "run_1", "status": "approved", "output": {"decision": "approve"}, "seq": 4}]}, self.CONFIG)
        progress = presenters.progress_line(state, by_name)
        interruption = presenters.interruption({**state, "run_status": "interrupted", "quarantined": True}, by_name)
        notice = presenters.conflict_notice(self.CALL, self.CONFIG, output={"decision": "deny"}, answered_by="", viewer="guest:a")

        assert card["pending_client_actions"][0]["title"] == "Issue refund"
        assert card["pending_client_actions"][0]["display_name"] == "Issue refund"
        assert receipt["receipts"][0]["title"] == "Issue refund"
        assert progress == "Issue refund…"
        assert "“Issue refund”" in interruption["why"] and "issue refund" not in interruption["why"] + interruption["next"]
        assert notice["title"] == "Issue refund"


class TestPersonaName:
    @pytest.mark.parametrize(("persona", "name"), [
        ("guest:3f2a9c1d", "Guest 3f2a"), ("app:alice", "alice"), ("okta:acme:alice@acme.com", "alice@acme.com"),
        ("staff:bob", "bob (staff)"), ("api:backend", "The application"), ("not a persona", "not a persona"),
    ])
    def test_names_each_kind_of_persona_for_people(self, persona, name):
        assert persona_name(persona) == name


class TestTodayAsADateBound:
    DATE = {"type": "string", "format": "date", "title": "Delivery date", "minimum": "today"}
    TOOL = {"name": "pick_date", "kind": "client", "parameters": {"type": "object", "properties": {"date": DATE}}}

    def test_the_form_shows_the_day_it_is_rendered_as_the_minimum(self):
        assert tools.date_bounds(self.DATE, today=date(2026, 12, 3)) == ("2026-12-03", "")

    def test_a_past_date_is_refused_in_words(self):
        problem = tools.answer_problem(self.TOOL, {"date": "2001-01-01"}, today=date(2026, 12, 3))

        assert problem == "Delivery date must be today or later"

    def test_a_person_whose_date_is_still_yesterday_may_pick_it(self):
        assert tools.answer_problem(self.TOOL, {"date": "2026-12-02"}, today=date(2026, 12, 3)) == ""
        assert tools.answer_problem(self.TOOL, {"date": "2026-12-01"}, today=date(2026, 12, 3))

    def test_the_configuration_check_takes_today_and_refuses_other_words(self):
        problems: list[str] = []

        tools.check_date_bounds(self.TOOL, "tools[0]", problems)
        tools.check_date_bounds({**self.TOOL, "parameters": {"properties": {"date": {**self.DATE, "maximum": "tomorrow"}}}},
                                "tools[1]", problems)

        assert problems == ['tools[1].parameters.properties.date: a date\'s minimum and maximum must be dates like 2026-12-24, or "today"']


class TestBareAddressesInMessages:
    def test_a_bare_web_address_becomes_a_link_that_opens_apart(self):
        html = presenters.render_markdown("Track it at https://shop.example.com/track?o=A-1 today")

        assert '<a href="https://shop.example.com/track?o=A-1" target="_blank" rel="noopener noreferrer nofollow">' in html

    def test_a_script_address_stays_text(self):
        assert "<a" not in presenters.render_markdown("javascript:alert(1) and [x](javascript:alert(1))")


class TestApprovalQuestion:
    def test_asks_in_the_assistants_voice_from_the_summary(self):
        tool = {"summary": "Refund ${amount} for order {order_id}"}

        assert tools.approval_question({"tool": "issue_refund", "arguments": {"amount": 20, "order_id": "A-1"}}, tool) == \
            "Shall I refund $20 for order A-1?"

    def test_keeps_a_word_in_capitals(self):
        assert tools.approval_question({"tool": "send_sms", "arguments": {}}, {"summary": "SMS the courier"}) == \
            "Shall I SMS the courier?"
