"""Every kind of log entry is declared where it must be: the staff timeline's words, and whether it announces a webhook."""

from __future__ import annotations

from dataclasses import fields

import pytest

from apps.ledger.types import KINDS
from apps.staff.queries.timeline import UNSUMMARISED, _summary
from apps.webhooks.events import BY_KIND, SILENT


def sample_payload(kind: str) -> dict:
    """A payload of the kind's own fields, each a plain value of its type."""
    out = {}
    for f in fields(KINDS[kind]):
        typed = str(f.type)
        out[f.name] = ([] if "list" in typed else {} if "dict" in typed else False if typed == "bool"
                       else 1 if "int" in typed or "float" in typed else "x")
    return out


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_kind_announces_a_webhook_or_says_it_announces_none(kind):
    assert (kind in BY_KIND) != (kind in SILENT), f"{kind}: add it to apps/webhooks/events.py BY_KIND or SILENT"


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_kind_has_words_on_the_staff_timeline_or_says_its_name_is_enough(kind):
    worded = bool(_summary(kind, sample_payload(kind)))

    assert worded != (kind in UNSUMMARISED), f"{kind}: give it a case in apps/staff/queries/timeline.py _summary or list it in UNSUMMARISED"


def test_the_tables_name_no_kind_that_does_not_exist():
    assert set(BY_KIND) | SILENT | UNSUMMARISED <= set(KINDS)


def test_an_approval_with_changes_says_what_changed_on_the_staff_timeline():
    payload = {**sample_payload("approval_response"), "decision": "approve", "answered_by": "staff:dana",
               "reviewed": {"arguments": {"order_id": "A-1", "amount": 20}}, "edited_arguments": {"amount": 15}}

    words = _summary("approval_response", payload)

    assert words == "approve with changes (amount 20 → 15) by staff:dana"
