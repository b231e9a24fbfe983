"""A tool's words for people (apps/agent/tools.py) and a persona's name on a page."""

from __future__ import annotations

import pytest

from apps.agent import tools
from apps.ledger.identities import persona_name

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
        assert (tools.display_name(REFUND, "issue_refund"), tools.display_name({}, "issue_refund")) == ("Refund", "issue refund")


class TestProgressPhrase:
    def test_with_known_arguments_is_the_filled_summary(self):
        tool = {"summary": "Looking up your order {order_id}"}

        assert tools.progress_phrase(tool, "lookup_order", {"order_id": "A-1"}) == "Looking up your order A-1…"

    def test_without_arguments_drops_the_placeholders(self):
        assert tools.progress_phrase({"summary": "Looking up your order {order_id}"}, "lookup_order") == "Looking up your order…"

    def test_without_a_summary_says_which_tool_is_used(self):
        assert tools.progress_phrase({"display_name": "Order lookup"}, "lookup_order") == "Using Order lookup…"


class TestPersonaName:
    @pytest.mark.parametrize(("persona", "name"), [
        ("guest:3f2a9c1d", "Guest 3f2a"), ("app:alice", "alice"), ("okta:acme:alice@acme.com", "alice@acme.com"),
        ("staff:bob", "bob (staff)"), ("api:backend", "The application"), ("not a persona", "not a persona"),
    ])
    def test_names_each_kind_of_persona_for_people(self, persona, name):
        assert persona_name(persona) == name
