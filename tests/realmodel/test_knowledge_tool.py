"""
The real llama.cpp model answers from the help content (PRODUCT.md "Knowledge"): made to call
`search_knowledge` (`tool_choice`), the passages it returned reach its next request numbered, and
the reply's citations name only passages that search returned; any other marker is taken out.
"""

import json
import re

import pytest
from django.utils import timezone

from apps.agent.state import conversation_state
from apps.conversations import queries
from apps.knowledge import actions
from apps.ledger import store
from apps.ledger.replay import replay, verify
from tests.knowledge.documents import HELP_CENTRE

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def test_the_model_searches_the_help_content_and_cites_only_what_it_found(start, make_assistant, relay):
    for title, text in HELP_CENTRE.items():
        upload = actions.check_upload(title=title, content=text.encode(), format="markdown",
                                      url=f"https://help.example.com/{title.lower()}")
        actions.add_source(upload=upload, now=timezone.now())
    bot = make_assistant(
        model={"provider": "openai", "model": "smollm2", "temperature": 0, "max_output_tokens": 300, "timeout_seconds": 120,
               "tool_choice": "search_knowledge"},
        knowledge={"enabled": True, "max_passages": 3}, tools=[], step_budget=3,
        instructions="Search the help centre with the customer's words as the query, then answer from what it returns.")

    cid = start("jacket return policy", assistant=bot)["conversation_id"]

    assert "search_knowledge" in [t["function"]["name"] for t in relay.requests[0]["tools"]]
    calls, result = relay.requests[1]["messages"][-2:]
    assert calls["tool_calls"][0]["function"]["name"] == "search_knowledge"
    returned = json.loads(result["content"])["passages"]
    assert result["role"] == "tool" and returned and [p["n"] for p in returned] == list(range(1, len(returned) + 1))
    assert any(p["title"] == "Returns" for p in returned)
    state = conversation_state(queries.conversation_for(cid))
    reply = state["messages"][-1]
    found = {p["n"]: p["passage_id"] for p in returned}
    assert state["run_status"] == "completed" and reply["text"].strip()
    assert all(found.get(c["n"]) == c["passage_id"] for c in reply["citations"])
    assert {int(n) for n in re.findall(r"\[(\d+)\]", reply["text"])} <= set(found)
    [complete] = [e.payload for e in store.read(cid) if e.kind == "turn_complete"]
    assert all(n not in found for n in complete.get("dropped_citations", []))
    assert replay(cid).ok and verify(cid).ok
