"""
The per-conversation writer lease across server processes.

Version-checked like a Kubernetes lease: every write is a conditional UPDATE on the version read
just before, so two processes can never both believe they hold it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import IntegrityError, transaction

from apps.conversations.models import Lease
from apps.ledger import sql


@dataclass(frozen=True)
class Held:
    holder: str
    version: int
    previous_holder: str  # a holder whose lease expired under it: it died mid-turn

    @property
    def token(self) -> tuple[str, int]:
        return self.holder, self.version


def acquire(*, conversation_id: str, holder: str, now: datetime, seconds: float) -> Held | None:
    """
    Take the lease if it is free, expired or already ours.

    Returns None when another live holder has it.
    """
    row = _row(conversation_id)
    if row is None:
        try:
            with transaction.atomic():
                Lease.objects.get_or_create(conversation_id=conversation_id)
        except IntegrityError:
            pass  # created concurrently by another process: fine
        row = _row(conversation_id)
    current_holder, version, expires_at = row
    if current_holder and current_holder != holder and expires_at and expires_at > now:
        return None
    taken = _update(
        conversation_id, {"holder": holder, "version": version + 1, "expires_at": now + timedelta(seconds=seconds)},
        version=version,
    )
    if taken != 1:
        return None
    previous = current_holder if current_holder != holder else ""
    return Held(holder=holder, version=version + 1, previous_holder=previous)


def renew(*, conversation_id: str, held: Held, now: datetime, seconds: float) -> bool:
    """Extend a held lease; False when it was lost."""
    return _update(conversation_id, {"expires_at": now + timedelta(seconds=seconds)}, holder=held.holder, version=held.version) == 1


def release(*, conversation_id: str, held: Held) -> None:
    """Give the lease up so the next writer need not wait for it to expire."""
    _update(conversation_id, {"holder": "", "expires_at": None}, holder=held.holder, version=held.version)


# Plain statements (apps/ledger/sql.py): a lease is taken and given back around every drive.


def _row(conversation_id: str) -> tuple[str, int, datetime | None] | None:
    leases = sql.table(Lease)
    found = sql.rows(f"SELECT holder, version, expires_at FROM {leases.name} WHERE conversation_id = %s",
                     [leases.value("conversation_id", conversation_id)])
    if not found:
        return None
    [(holder, version, expires_at)] = found
    if isinstance(expires_at, str):
        expires_at = datetime.fromisoformat(expires_at)
    if expires_at is not None and expires_at.tzinfo is None:
        expires_at = expires_at.replace(tzinfo=UTC)  # SQLite keeps UTC without its offset
    return holder, version, expires_at


def _update(conversation_id: str, values: dict, **where) -> int:
    leases = sql.table(Lease)
    assignments = ", ".join(f"{leases.column(n)} = %s" for n in values)
    conditions = "".join(f" AND {leases.column(n)} = %s" for n in where)
    params = [leases.value(n, v) for n, v in values.items()]
    params += [leases.value("conversation_id", conversation_id)] + [leases.value(n, v) for n, v in where.items()]
    return sql.execute(f"UPDATE {leases.name} SET {assignments} WHERE conversation_id = %s{conditions}", params)
