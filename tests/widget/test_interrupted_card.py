"""An unknown outcome, as the customer's page tells it: what happened, what the team checks, what they can do."""

from __future__ import annotations

import pytest

from apps.runs.models import WorkflowLog
from tests.staff.conftest import quarantined, receiver  # noqa: F401 - fixtures: a refund turn a crash left unknown

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def page_of(client, q) -> str:
    return client.get(f"/c/{q['conversation_id']}", {"token": q["token"]}).content.decode()


class TestAnUnknownOutcomeNobodySettled:
    def test_the_card_tells_the_customer_what_happened_and_what_the_team_checks_in_their_words(self, client, quarantined):  # noqa: F811
        page = page_of(client, quarantined())

        assert "Something went wrong on our side while “Issue refund” was under way" in page
        assert "We are checking whether it went through: our team is looking at what the system that handles it received." in page
        assert "You don’t need to do anything. This page updates as soon as they have checked" in page
        assert "same reference" not in page and "recognised as a repeat" not in page

    def test_no_continue_is_offered_before_staff_have_settled_it(self, client, quarantined):  # noqa: F811
        page = page_of(client, quarantined())

        assert ">Continue</button>" not in page

    def test_a_continue_posted_from_an_older_page_is_refused_with_the_reason_and_starts_nothing(self, client, quarantined):  # noqa: F811
        q = quarantined()

        response = client.post(f"/c/{q['conversation_id']}/continue", {"token": q["token"]}, headers={"HX-Request": "true"})

        assert response.status_code == 409
        assert "Our team is still checking whether the interrupted step went through." in response.content.decode()
        assert WorkflowLog.objects.filter(conversation_id=q["conversation_id"]).count() == 1

    def test_once_staff_marked_it_done_continue_is_offered(self, client, quarantined, clock):  # noqa: F811
        from apps.staff import actions as staff_actions

        q = quarantined()
        staff_actions.resolve_quarantine(run_id=q["run_id"], resolution="done", note="R-1 exists", actor="staff:ops", now=clock())

        page = page_of(client, q)

        assert ">Continue</button>" in page and "Our team has since confirmed that it went through." in page
