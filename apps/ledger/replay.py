"""
Replay and verification of a conversation's log (the `conversation` command and staff buttons).

Both read only. `replay` folds the log into the four stores, calling no model or tool, and
compares the result with the stored rows; `verify` recomputes every hash and signature.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from apps.ledger import chain
from apps.ledger.keys import verification_keys
from apps.ledger.models import Event
from apps.ledger.projection import KEYS, fold
from apps.ledger.store import MODELS, iso, read


def _plain(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return iso(value)
    if hasattr(value, "hex") and type(value).__name__ == "UUID":
        return str(value)
    return value


def stored_rows(conversation_id: str, fields: dict[str, set[str]]) -> dict[str, dict[tuple, dict[str, Any]]]:
    """The four stores of one conversation as the database holds them, in the projection's form."""
    out: dict[str, dict[tuple, dict[str, Any]]] = {}
    for name, model in MODELS.items():
        owner = "id" if name == "conversations" else "conversation_id"
        names = sorted(fields.get(name) or set(KEYS[name]))
        rows = {}
        for row in model.objects.filter(**{owner: conversation_id}).values(*names):
            clean = {k: _plain(v) for k, v in row.items()}
            rows[tuple(clean[k] for k in KEYS[name])] = clean
        out[name] = rows
    return out


@dataclass
class ReplayReport:
    ok: bool
    events: int
    differences: list[str] = field(default_factory=list)


def replay(conversation_id: str) -> ReplayReport:
    """Fold the log and list every difference from the stored four stores."""
    events = read(conversation_id)
    folded = fold(conversation_id, events).rows
    fields = {name: set().union(*(set(r) for r in rows.values())) if rows else set() for name, rows in folded.items()}
    stored = stored_rows(conversation_id, fields)
    differences = []
    for name in MODELS:
        want, have = folded[name], stored[name]
        for key in sorted(set(want) | set(have), key=str):
            if key not in have:
                differences.append(f"{name} {key}: in the log, missing from the store")
            elif key not in want:
                differences.append(f"{name} {key}: in the store, not in the log")
            else:
                for column in sorted(want[key]):
                    if want[key][column] != have[key].get(column):
                        differences.append(
                            f"{name} {key}.{column}: log says {json.dumps(want[key][column], default=str)}, "
                            f"store has {json.dumps(have[key].get(column), default=str)}"
                        )
    return ReplayReport(ok=not differences, events=len(events), differences=differences)


def stored_entries(conversation_id: str) -> list[chain.StoredEntry]:
    """The raw entries of a partition in stored order; an unreadable payload is kept as its text."""
    out = []
    for e in Event.objects.filter(conversation_id=conversation_id).order_by("seq", "id"):
        try:
            payload: Any = json.loads(e.payload)
        except ValueError:
            payload = e.payload
        out.append(
            chain.StoredEntry(
                partition=f"conv-{conversation_id}", seq=e.seq, kind=e.kind, turn_id=e.turn_id, payload=payload,
                actor=e.actor, created_at=iso(e.created_at), prev_hash=e.prev_hash, hash=e.hash,
                signature=e.signature, key_id=e.key_id,
            )
        )
    return out


def verify(conversation_id: str) -> chain.VerifyResult:
    """Recompute every hash and signature of a conversation's log."""
    return chain.verify_chain(stored_entries(conversation_id), verification_keys())
