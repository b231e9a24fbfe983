"""
Replay and verification of a conversation's log (the `conversation` command and staff buttons).

All read only. `replay` folds the log into the four stores, calling no model or tool, and
compares the result with the stored rows; `verify` recomputes every hash and signature;
`what_if` changes one recorded step in memory and reports where replay would diverge.
On PostgreSQL each runs in one REPEATABLE READ, READ ONLY transaction: the log and the stores are
read from the same snapshot, and the database itself refuses any write.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import jsonpatch
import jsonpointer
import psycopg
from django.db import connection, transaction

from apps.ledger import chain, identities
from apps.ledger.keys import verification_keys
from apps.ledger.models import Event
from apps.ledger.projection import Folded, fold
from apps.ledger.store import KEYS, MODELS, head_store, iso, partition_model
from apps.ledger.types import KINDS, ApprovalRequest, ApprovalResponse, ModelRound, Recorded


def check_actor(actor: str) -> str:
    """
    Return the identity a log operation is done as, if it has the contract's form (`identities`).

    :raises ValueError: not `provider:scope:external_id` or `provider:external_id`
    """
    try:
        identities.parse_persona(actor)
    except identities.InvalidPersona:
        raise ValueError(
            f"actor {actor!r} is not an identity of the form provider:scope:external_id or provider:external_id"
        ) from None
    return actor


@contextlib.contextmanager
def read_only() -> Iterator[None]:
    """Read from one snapshot that refuses writes; inside a caller's transaction, read in that one."""
    if connection.in_atomic_block:
        yield
        return
    if connection.vendor != "postgresql":
        with transaction.atomic():  # SQLite's transaction is one snapshot already
            yield
        return
    raw = None
    try:
        with transaction.atomic():
            # Said with the BEGIN that psycopg sends before the first statement, rather than as a
            # statement of its own: every push, poll and page load reads through here, and each
            # round trip is time they wait.
            before = connection.connection.isolation_level, connection.connection.read_only
            raw = connection.connection  # from here on, set back in `finally`
            raw.isolation_level, raw.read_only = psycopg.IsolationLevel.REPEATABLE_READ, True
            yield
    finally:
        # The connection goes on (and back to the pool) as it was, whatever happened inside.
        if raw is not None and not raw.closed:
            if raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                raw.rollback()
            raw.isolation_level, raw.read_only = before


def _plain(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return iso(value)
    if hasattr(value, "hex") and type(value).__name__ == "UUID":
        return str(value)
    return value


def stored_rows(conversation_id: str, fields: dict[str, set[str]]) -> dict[str, dict[tuple, dict[str, Any]]]:
    """The stores of one conversation as the database holds them, in the projection's form."""
    out: dict[str, dict[tuple, dict[str, Any]]] = {}
    for name, model in MODELS.items():
        owner = "id" if name == head_store() else "conversation_id"
        names = sorted(fields.get(name) or set(KEYS[name]))
        rows = {}
        for row in model.objects.filter(**{owner: conversation_id}).values(*names):
            clean = {k: _plain(v) for k, v in row.items()}
            rows[tuple(clean[k] for k in KEYS[name])] = clean
        out[name] = rows
    return out


def _diff(
    want: dict[str, dict], have: dict[str, dict], *, left: str, right: str, missing: str, extra: str, every_column: bool
) -> list[str]:
    """List how two sets of store rows differ; without `every_column`, only in the columns `want` has."""
    differences = []
    for name in MODELS:
        a, b = want.get(name, {}), have.get(name, {})
        for key in sorted(set(a) | set(b), key=str):
            if key not in b:
                differences.append(f"{name} {key}: {missing}")
            elif key not in a:
                differences.append(f"{name} {key}: {extra}")
            else:
                for column in sorted(set(a[key]) | set(b[key]) if every_column else set(a[key])):
                    if a[key].get(column) != b[key].get(column):
                        differences.append(
                            f"{name} {key}.{column}: {left} {json.dumps(a[key].get(column), default=str)}, "
                            f"{right} {json.dumps(b[key].get(column), default=str)}"
                        )
    return differences


class Unreplayable(ValueError):
    """An entry cannot be folded: unreadable, of an unknown kind, or not applicable to the state before it."""

    def __init__(self, seq: int, problem: str):
        super().__init__(f"entry {seq}: {problem}")
        self.seq, self.problem = seq, problem


def _recorded(entries: list[chain.StoredEntry]) -> list[Recorded]:
    out = []
    for e in entries:
        if not isinstance(e.payload, dict):
            raise Unreplayable(e.seq, "unreadable: the payload is not a JSON object (see `conversation repair`)")
        if e.kind not in KINDS:
            raise Unreplayable(e.seq, f"unreadable: unknown kind {e.kind!r} (see `conversation repair`)")
        out.append(Recorded(seq=e.seq, kind=e.kind, turn_id=e.turn_id, actor=e.actor, created_at=e.created_at, payload=e.payload))
    return out


def _fold_step(conversation_id: str, rec: Recorded, state: Folded) -> None:
    try:
        fold(conversation_id, [rec], state)
    except (KeyError, ValueError, TypeError) as exc:
        raise Unreplayable(rec.seq, f"does not apply to the state before it ({type(exc).__name__}: {exc})") from exc


@dataclass
class ReplayReport:
    ok: bool
    events: int
    differences: list[str] = field(default_factory=list)
    unreplayable_seq: int | None = None  # the first entry the fold stopped at, if any


def replay(conversation_id: str) -> ReplayReport:
    """Fold the log and list every difference from the stored four stores; read only."""
    cid = str(conversation_id)
    with read_only():
        entries = stored_entries(cid)
        try:
            events = _recorded(entries)
            state = Folded()
            for rec in events:
                _fold_step(cid, rec, state)
        except Unreplayable as exc:
            return ReplayReport(ok=False, events=len(entries), differences=[str(exc)], unreplayable_seq=exc.seq)
        folded = state.rows
        fields = {name: set().union(*(set(r) for r in rows.values())) if rows else set() for name, rows in folded.items()}
        stored = stored_rows(cid, fields)
    differences = _diff(
        folded, stored, left="log says", right="store has",
        missing="in the log, missing from the store", extra="in the store, not in the log", every_column=False,
    )
    return ReplayReport(ok=not differences, events=len(events), differences=differences)


def log_rows(conversation_id: str, *, after_seq: int = 0) -> list[chain.Row]:
    """The raw entries of a partition (after `after_seq`) in stored order as plain rows; an unreadable payload is kept as its text."""
    partition = f"conv-{conversation_id}"
    rows = Event.objects.filter(conversation_id=conversation_id, seq__gt=after_seq).order_by("seq", "id").values_list(
        "seq", "kind", "turn_id", "payload", "actor", "created_at", "prev_hash", "hash", "signature", "key_id"
    )
    out = []
    for seq, kind, turn_id, text, actor, created_at, prev_hash, digest, signature, key_id in rows:
        try:
            payload: Any = json.loads(text)
        except ValueError:
            payload = text
        out.append((partition, seq, kind, turn_id, payload, actor, iso(created_at), prev_hash, digest, signature, key_id, text))
    return out


def stored_entries(conversation_id: str) -> list[chain.StoredEntry]:
    """The raw entries of a partition in stored order; an unreadable payload is kept as its text."""
    return [chain.StoredEntry(*row) for row in log_rows(conversation_id)]


def head_problem(entries: list[chain.StoredEntry], head: tuple[int, str]) -> chain.VerifyResult | None:
    """
    Compare the conversation's recorded head with the last entry.

    The chain alone cannot show that its newest entries were deleted; the head, moved in the same
    transaction as every append, can.
    """
    return _head_problem(len(entries), (entries[-1].seq, entries[-1].hash) if entries else (0, chain.GENESIS), head)


def _head_problem(count: int, last: tuple[int, str], head: tuple[int, str]) -> chain.VerifyResult | None:
    (last_seq, last_hash), (head_seq, head_hash) = last, head
    if head_seq > last_seq:
        return chain.VerifyResult(
            False, count, last_seq + 1, f"missing: the log ends at seq {last_seq} but the conversation's head is seq {head_seq}"
        )
    if head_seq < last_seq:
        return chain.VerifyResult(
            False, count, head_seq + 1, f"unexpected: the conversation's head is seq {head_seq} but the log goes on to {last_seq}"
        )
    if head_hash != last_hash:
        return chain.VerifyResult(False, count, last_seq, "the conversation's head hash does not match this entry")
    return None


def verify(conversation_id: str, *, after: tuple[int, str] | None = None) -> chain.VerifyResult:
    """
    Recompute every hash and signature of a conversation's log and check its head; read only.

    `after` (seq, hash): an entry this process verified before. Only that entry and the ones after
    it are read and checked, chained on it, so a long log costs what its new entries cost; that
    entry or a later one changed, a gap or a moved head still fails. Should they fail, the whole log
    is verified instead and that result returned: it names the first bad entry wherever it is.
    """
    cid = str(conversation_id)
    start = (0, chain.GENESIS)
    with read_only():
        rows = log_rows(cid, after_seq=after[0] - 1 if after else 0)
        head = partition_model().objects.filter(id=cid).values_list("head_seq", "head_hash").first()
    if after is not None:
        # The entry itself is checked again too (its hash and signature, chained on the link it
        # holds), and must still be the one verified: a log repaired since no longer has it.
        if not rows or (rows[0][chain.SEQ], rows[0][chain.HASH]) != after:
            return verify(cid)
        start = (after[0] - 1, rows[0][chain.PREV_HASH])
    result = chain.verify_rows(rows, verification_keys(), after=start)
    if result.ok and head is not None:
        last = (rows[-1][chain.SEQ], rows[-1][chain.HASH]) if rows else start
        result = _head_problem(result.checked, last, head) or result
    if after is not None and not result.ok:
        return verify(cid)
    return result


# --- what if -----------------------------------------------------------------------------------


@dataclass
class WhatIf:
    """Where replay of the log with one changed entry departs from the recorded log."""

    seq: int
    patch: list[dict[str, Any]]
    before: dict[str, Any]
    after: dict[str, Any]
    diverges_at: int | None = None  # the first seq after which the stores would differ
    differences: list[str] = field(default_factory=list)  # the store differences at that seq
    breaks_at: int | None = None  # the first seq the changed log no longer folds at
    problem: str = ""
    approvals: list[str] = field(default_factory=list)  # approvals whose binding no longer matches
    completion: list[str] = field(default_factory=list)  # completion decisions that would change
    completion_recorded: bool = False
    completion_holds: bool | None = None  # None when the recorded log has no completion

    @property
    def diverges(self) -> bool:
        return bool(
            self.diverges_at or self.breaks_at or self.approvals or self.completion
            or (self.completion_recorded and not self.completion_holds)
        )


def check_patch(patch: Any) -> list[dict[str, Any]]:
    """
    Return an RFC 6902 JSON patch given as a list of operations or as its JSON text.

    :raises ValueError: not a JSON patch
    """
    if isinstance(patch, str):
        try:
            patch = json.loads(patch)
        except ValueError as exc:
            raise ValueError(f"the patch is not JSON: {exc}") from exc
    if isinstance(patch, dict):
        patch = [patch]
    try:
        return list(jsonpatch.JsonPatch(patch))
    except (jsonpatch.JsonPatchException, TypeError, KeyError, AttributeError) as exc:
        raise ValueError(f"not an RFC 6902 JSON patch: {exc}") from exc


def what_if(conversation_id: str, *, seq: int, patch: Any) -> WhatIf:
    """
    Apply a JSON patch to the payload of entry `seq` in memory and replay the changed log.

    Reports the first seq whose resulting store rows differ from the recorded log's, approvals
    whose reviewed tool and arguments no longer match the call, and whether completion would
    still hold (the rules above the log judge that: `WHAT_IF_JUDGES`). Calls no model or tool and
    writes nothing.
    :raises ValueError: no entry `seq`, the log is unreadable, or the patch is malformed or does not apply
    """
    cid = str(conversation_id)
    operations = check_patch(patch)
    with read_only():
        entries = stored_entries(cid)
        recorded = _recorded(entries)
        index = next((i for i, rec in enumerate(recorded) if rec.seq == seq), None)
        if index is None:
            raise ValueError(f"conv-{cid} has no entry {seq}")
        before = recorded[index].payload
        try:
            after = jsonpatch.apply_patch(before, operations)
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
            raise ValueError(f"the patch does not apply to entry {seq}: {exc}") from exc
        if not isinstance(after, dict):
            raise ValueError("the patched payload must stay a JSON object")
        changed = [*recorded[:index], dataclasses.replace(recorded[index], payload=after), *recorded[index + 1 :]]
        report = WhatIf(seq=seq, patch=operations, before=before, after=after)
        for judge in WHAT_IF_JUDGES:
            judge(report, cid, recorded, changed)
    _compare(cid, report, recorded, changed)
    return report


# Checks of a changed log by the rules above it, each `judge(report, conversation_id, recorded,
# changed)` filling in its part of the report (the agent's completion rule: apps/agent/apps.py).
WHAT_IF_JUDGES: list[Callable[[WhatIf, str, list[Recorded], list[Recorded]], None]] = []


def _compare(cid: str, report: WhatIf, recorded: list[Recorded], changed: list[Recorded]) -> None:
    was, now = Folded(), Folded()
    for old, new in zip(recorded, changed, strict=True):
        _fold_step(cid, old, was)
        try:
            _fold_step(cid, new, now)
        except Unreplayable as exc:
            report.breaks_at, report.problem = exc.seq, exc.problem
            break
        if report.diverges_at is None and was.rows != now.rows:
            report.diverges_at = new.seq
            report.differences = _diff(
                was.rows, now.rows, left="recorded", right="with the change",
                missing="no longer created", extra="newly created", every_column=True,
            )
    bound_before = set(_unbound_approvals(recorded))
    report.approvals = [line for key, line in _unbound_approvals(changed).items() if key not in bound_before]


def _unbound_approvals(events: list[Recorded]) -> dict[tuple[str, str], str]:
    """Approvals whose reviewed tool and arguments differ from the call they answer (by run and call)."""
    calls: dict[tuple[str, str], tuple[str, Any, int]] = {}
    requests: dict[tuple[str, str], tuple[str, Any, int]] = {}
    out: dict[tuple[str, str], str] = {}
    for rec in events:
        try:
            body = rec.body
        except TypeError:
            continue  # a changed entry that no longer fits its kind: reported where the fold breaks
        match body:
            case ModelRound(run_id=run_id, calls=round_calls):
                for c in round_calls or []:
                    if isinstance(c, dict):
                        calls[(run_id, c.get("call_id"))] = (c.get("tool"), c.get("arguments"), rec.seq)
            case ApprovalRequest(run_id=run_id, call_id=call_id, tool=tool, arguments=arguments):
                requests[(run_id, call_id)] = (tool, arguments, rec.seq)
            case ApprovalResponse(decision="expired"):
                continue  # the clock's resolution: nobody reviewed anything
            case ApprovalResponse(run_id=run_id, call_id=call_id, reviewed=reviewed):
                key = (run_id, call_id)
                reviewed = reviewed if isinstance(reviewed, dict) else {}
                seen = (reviewed.get("tool"), reviewed.get("arguments"))
                for what, source in (("approval request", requests.get(key)), ("model's call", calls.get(key))):
                    if source is None:
                        out[key] = f"approval at seq {rec.seq} of call {key[1]}: the {what} it answers no longer exists"
                        break
                    if (source[0], source[1]) != seen:
                        out[key] = (
                            f"approval at seq {rec.seq} of call {key[1]}: reviewed {seen[0]} {json.dumps(seen[1], sort_keys=True)}, "
                            f"but the {what} at seq {source[2]} is {source[0]} {json.dumps(source[1], sort_keys=True)}"
                        )
                        break
    return out
