"""
`conversation repair`: the one path that may remove entries from a conversation's log.

It removes unreadable entries (a payload that no longer parses as a JSON object, an unknown kind,
a payload that does not fit its kind), re-chains and re-signs what remains with gapless `seq`,
rebuilds the four stores from the repaired log and appends a signed `repair` entry naming what
was removed and by whom. It refuses to launder tampering: every entry it keeps must be authentic
on its own and the log must be otherwise complete.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from django.db import connection, transaction

from apps.ledger import chain, compiler, store
from apps.ledger.keys import signing_key, verification_keys
from apps.ledger.models import Event
from apps.ledger.projection import Change, Folded
from apps.ledger.replay import Unreplayable, _fold_step, check_actor, head_problem, stored_entries
from apps.ledger.types import KINDS, Recorded, Repair, decode


class RepairRefused(Exception):
    """The log cannot be repaired by removing unreadable entries; nothing was changed."""


@dataclass(frozen=True)
class RepairReport:
    removed: list[dict]  # [{"seq", "kind", "hash", "reason"}], seq as it was before the repair
    kept: int
    repair_seq: int | None  # the seq of the appended `repair` entry; None when nothing was unreadable


def unreadable(entry: chain.StoredEntry) -> str:
    """Say why an entry cannot be read back as an event; "" when it can."""
    if not isinstance(entry.payload, dict):
        return "the payload is not a JSON object"
    if entry.kind not in KINDS:
        return f"unknown kind {entry.kind!r}"
    try:
        decode(entry.kind, entry.payload)
    except TypeError as exc:
        return f"the payload does not fit kind {entry.kind}: {exc}"
    return ""


@contextlib.contextmanager
def repair_gate() -> Iterator[None]:
    """
    Let this transaction update and delete ledger_event rows (migration ledger/0002).

    Must run inside the repair's transaction: the gate closes when it ends at the latest.
    """
    if not connection.in_atomic_block:
        raise RuntimeError("the repair gate opens only inside a transaction")
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL waypoint.repair = 'on'")
            yield
            cursor.execute("SET LOCAL waypoint.repair = 'off'")
        else:
            cursor.execute("INSERT INTO ledger_repair_gate (id) VALUES (NULL)")
            gate = cursor.lastrowid
            yield
            cursor.execute("DELETE FROM ledger_repair_gate WHERE id = %s", [gate])


def repair(*, conversation_id: str, actor: str, now: datetime) -> RepairReport:
    """
    Remove a conversation's unreadable entries, re-chain and re-sign the rest, and record that.

    Entries that cannot be replayed without a removed one (a run whose dispatch was removed) are
    removed with it, so that the rest replays. One transaction, conversation row locked.
    :raises ValueError: the actor is not an identity
    :raises DoesNotExist: no such conversation
    :raises RepairRefused: a turn is running, a readable entry fails verification, entries are
        missing, or nothing would be left to replay
    """
    check_actor(actor)
    cid = str(conversation_id)
    with transaction.atomic():
        conversation = store.partition_model().objects.select_for_update(no_key=True).get(id=cid)
        entries = stored_entries(cid)
        removed = {e.seq: reason for e in entries if (reason := unreadable(e))}
        if not removed:
            return RepairReport(removed=[], kept=len(entries), repair_seq=None)
        _check_repairable(conversation, entries, removed, now)
        unreadable_count = len(removed)
        kept = _replayable_rest(cid, entries, removed)
        rechained = _rechain(cid, entries, kept)
        with repair_gate():
            Event.objects.filter(conversation_id=cid, seq__in=list(removed)).delete()
            # Ascending order: each entry moves to a seq no greater than its own, already vacated.
            original = {e.seq: e for e in entries}
            for old_seq, entry in rechained:
                if entry != original[old_seq]:
                    Event.objects.filter(conversation_id=cid, seq=old_seq).update(
                        seq=entry.seq, prev_hash=entry.prev_hash, hash=entry.hash,
                        signature=entry.signature, key_id=entry.key_id,
                    )
        events = [
            Recorded(seq=e.seq, kind=e.kind, turn_id=e.turn_id, actor=e.actor, created_at=e.created_at, payload=e.payload)
            for _, e in rechained
        ]
        rebuild_stores(conversation_id=cid, events=events)
        gone = [
            {"seq": e.seq, "kind": e.kind, "hash": e.hash, "reason": removed[e.seq]} for e in entries if e.seq in removed
        ]
        last = rechained[-1][1]
        dependent = len(gone) - unreadable_count
        why = f"removed {unreadable_count} unreadable and {dependent} dependent entries" if dependent else (
            f"removed {unreadable_count} unreadable {'entry' if unreadable_count == 1 else 'entries'}"
        )
        conversation.head_seq, conversation.head_hash = last.seq, last.hash  # the re-chained log's head
        [entry] = store.append(
            conversation, [Repair(removed=gone, reason=f"{why}; re-chained and re-signed the {len(rechained)} left")],
            actor=actor, now=now,
        )
    return RepairReport(removed=gone, kept=len(rechained), repair_seq=entry.seq)


def _check_repairable(conversation, entries: list[chain.StoredEntry], removed: dict[int, str], now: datetime) -> None:
    if store.lease_model().objects.filter(conversation_id=conversation.id, expires_at__gt=now).exclude(holder="").exists():
        raise RepairRefused("a turn of this conversation is running; repair it when the turn has stopped")
    if [e.seq for e in entries] != list(range(1, len(entries) + 1)):
        raise RepairRefused("entries are missing or out of order; repair removes unreadable entries only")
    problem = head_problem(entries, (conversation.head_seq, conversation.head_hash))
    if problem is not None:
        raise RepairRefused(f"entry {problem.first_bad_seq} is {problem.problem}")
    keys = verification_keys()
    before: chain.StoredEntry | None = None
    for entry in entries:
        if entry.seq not in removed:
            if before is None:
                link = chain.GENESIS
            elif before.seq in removed:
                link = entry.prev_hash  # it is re-chained anyway; its own hash and signature must hold
            else:
                link = before.hash
            problem = chain.entry_problem(entry, link, keys)
            if problem:
                raise RepairRefused(f"entry {entry.seq} is readable but fails verification ({problem}); repair does not re-sign it")
        before = entry


def _replayable_rest(cid: str, entries: list[chain.StoredEntry], removed: dict[int, str]) -> list[chain.StoredEntry]:
    """Fold what is left; an entry that only applied on top of a removed one goes too (recorded in `removed`)."""
    state, kept = Folded(), []
    for e in entries:
        if e.seq in removed:
            continue
        rec = Recorded(seq=e.seq, kind=e.kind, turn_id=e.turn_id, actor=e.actor, created_at=e.created_at, payload=e.payload)
        trial = Folded(rows={name: dict(rows) for name, rows in state.rows.items()})
        try:
            _fold_step(cid, rec, trial)
        except Unreplayable as exc:
            removed[e.seq] = f"cannot be replayed without the removed entries ({exc.problem})"
            continue
        state = trial
        kept.append(e)
    if not state.rows[store.head_store()]:
        raise RepairRefused("the conversation's first entry is unreadable; nothing would be left to replay")
    return kept


def _rechain(cid: str, entries: list[chain.StoredEntry], kept: list[chain.StoredEntry]) -> list[tuple[int, chain.StoredEntry]]:
    """Number the kept entries from 1 and chain and sign them anew from the first one that moved."""
    key = signing_key()
    out: list[tuple[int, chain.StoredEntry]] = []
    prev = chain.GENESIS
    for seq, entry in enumerate(kept, start=1):
        if seq == entry.seq and entry.prev_hash == prev:
            out.append((entry.seq, entry))
        else:
            body = chain.canonical(
                partition=f"conv-{cid}", seq=seq, kind=entry.kind, turn_id=entry.turn_id, payload=entry.payload,
                actor=entry.actor, created_at=entry.created_at,
            )
            digest = chain.entry_hash(prev, body)
            out.append(
                (entry.seq, dataclasses.replace(entry, seq=seq, prev_hash=prev, hash=digest, signature=key.sign(digest), key_id=key.key_id))
            )
        prev = out[-1][1].hash
    return out


def rebuild_stores(*, conversation_id: str, events: list[Recorded]) -> None:
    """
    Rewrite the four stores of one conversation from its log, in the caller's transaction.

    The conversation row stays (the log and tokens hang on it) and gets the folded values; the
    other stores' rows are deleted and created again through the append's own write path.
    :raises ValueError: the log does not fold
    """
    from apps.ledger.projection import fold

    cid = str(conversation_id)
    head, partition = store.head_store(), store.partition_model()
    rows = fold(cid, events).rows
    [conversation] = rows[head].values()
    partition.objects.filter(id=cid).update(
        **{name: compiler.db_value(partition._meta.get_field(name), v) for name, v in conversation.items() if name != "id"}
    )
    for name, model in store.MODELS.items():
        if name != head:
            model.objects.filter(conversation_id=cid).delete()
    for name, table in rows.items():
        if name != head:
            for key, row in table.items():
                compiler.apply(cid, Change(name, key, create=row))
