"""
The assistant's side of knowledge (PRODUCT.md "Knowledge"): its `knowledge` settings, the
`search_knowledge` tool's result, and the citations of a reply.

What the model saw is the tool's result in the log, numbered passage by passage through the turn,
so a reply's `[n]` markers are resolved against the record alone: the same after a source changes.
"""

from __future__ import annotations

import re
from typing import Any

from apps.actions.models import ActionLog
from apps.agent import handoff

KNOWLEDGE_DEFAULTS = {"enabled": False, "sources": "all", "max_passages": 5, "no_answer": "say"}
NO_ANSWER = ("say", "offer_handoff")
MAX_PASSAGES = 20
TOOL = "search_knowledge"
NOTHING_FOUND = {"passages": [], "note": "nothing found"}
# What a citation carries of its passage (the passage's text stays in the tool result).
CITED = ("passage_id", "source_id", "title", "version", "url")
_MARKER = re.compile(r"\[(\d{1,3})\]")


def knowledge_settings(config: dict[str, Any]) -> dict[str, Any]:
    """An assistant's knowledge settings; one stored before they existed has them off."""
    return {**KNOWLEDGE_DEFAULTS, **(config.get("knowledge") or {})}


def check_knowledge(block: Any, problems: list[str]) -> dict[str, Any]:
    """The `knowledge` block, with its defaults filled in."""
    if not isinstance(block, dict):
        problems.append("knowledge: must be an object")
        return dict(KNOWLEDGE_DEFAULTS)
    out = {**KNOWLEDGE_DEFAULTS, **block}
    unknown = set(block) - set(KNOWLEDGE_DEFAULTS)
    if unknown:
        problems.append(f"knowledge: unknown keys {sorted(unknown)}")
    if not isinstance(out["enabled"], bool):
        problems.append("knowledge.enabled: must be true or false")
    sources = out["sources"]
    if sources != "all" and not (isinstance(sources, list) and all(isinstance(s, str) and s for s in sources)):
        problems.append('knowledge.sources: must be "all" or a list of source ids')
    limit = out["max_passages"]
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_PASSAGES:
        problems.append(f"knowledge.max_passages: must be a whole number from 1 to {MAX_PASSAGES}")
    if out["no_answer"] not in NO_ANSWER:
        problems.append(f"knowledge.no_answer: one of {', '.join(NO_ANSWER)}")
    return out


def offered(config: dict[str, Any]) -> bool:
    """Whether the model is offered `search_knowledge` (`knowledge.enabled`)."""
    return bool(knowledge_settings(config)["enabled"])


def numbered(passages: list[dict[str, Any]], *, after: int) -> dict[str, Any]:
    """The tool's result: the passages numbered on from the `after` that earlier searches of the turn returned."""
    if not passages:
        return dict(NOTHING_FOUND)
    return {"passages": [{"n": after + i, **p} for i, p in enumerate(passages, start=1)]}


def returned(results: list[Any]) -> dict[int, dict[str, Any]]:
    """The passages a turn's `search_knowledge` results returned, by number."""
    found: dict[int, dict[str, Any]] = {}
    for result in results:
        for passage in (result or {}).get("passages", []) if isinstance(result, dict) else []:
            if isinstance(passage, dict) and isinstance(passage.get("n"), int):
                found[passage["n"]] = passage
    return found


def cite(text: str, results: list[Any]) -> tuple[str, list[dict[str, Any]], list[int]]:
    """
    Resolve a reply's `[n]` markers against the passages the turn's searches returned.

    Returns the text with every marker that names nothing returned taken out, the citations (each
    passage once, in the order first cited) and the numbers taken out. Pure; applied to the replies
    of assistants with knowledge on, whose model was told what a marker means.
    """
    found = returned(results)
    citations: dict[int, dict[str, Any]] = {}
    dropped: list[int] = []

    def keep(match: re.Match) -> str:
        n = int(match.group(1))
        passage = found.get(n)
        if passage is None:
            dropped.append(n)
            return ""
        citations.setdefault(n, {"n": n, **{k: passage[k] for k in CITED if passage.get(k) not in (None, "")}})
        return match.group(0)

    kept = _MARKER.sub(keep, text)
    if dropped:
        kept = re.sub(r"[ \t]+([.,;:!?])", r"\1", re.sub(r"[ \t]{2,}", " ", kept)).strip()
    return kept, list(citations.values()), dropped


def passage_seen(conversation_id: str, passage_id: str) -> dict[str, Any] | None:
    """
    A passage as the conversation's searches returned it: from its record, so the text a reply cited
    is the one the model saw, even after its source was edited or deleted. None if none returned it.
    """
    outputs = ActionLog.objects.filter(conversation_id=conversation_id, tool=TOOL, status="succeeded").order_by(
        "started_at").values_list("output", flat=True)
    for output in outputs:
        for passage in output.get("passages", []) if isinstance(output, dict) else []:
            if isinstance(passage, dict) and passage.get("passage_id") == passage_id:
                return passage
    return None


def found_nothing(results: list[Any]) -> bool:
    """Whether the turn searched and every search came back empty."""
    return bool(results) and not returned(results)


def offers_a_person(config: dict[str, Any], results: list[Any]) -> bool:
    """Whether a reply offers **Talk to a person**: its searches found nothing, the assistant says so, and can hand over."""
    return (knowledge_settings(config)["no_answer"] == "offer_handoff" and handoff.available(config)
            and found_nothing(results))
