"""
The per-conversation writer lease across server processes.

Version-checked like a Kubernetes lease: every write is a conditional UPDATE on the version read
just before, so two processes can never both believe they hold it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction

from apps.conversations import statements
from apps.conversations.models import Lease
from apps.ledger.sql import Statement


@dataclass(frozen=True)
class Held:
    holder: str
    version: int
    previous_holder: str  # a holder whose lease expired under it: it died mid-turn

    @property
    def token(self) -> tuple[str, int]:
        return self.holder, self.version


def acquire(*, conversation_id: str, holder: str, now: datetime, seconds: float, only_free: bool = False) -> Held | None:
    """
    Take the lease if it is free, expired or already ours (`only_free`: if it is free or expired).

    Returns None when another live holder has it. Inside a transaction it commits with that
    transaction: a turn's batch one and the lease of the drive that runs it are one commit.
    """
    row = _row(conversation_id)
    if row is None:
        try:
            with transaction.atomic():
                Lease.objects.create(conversation_id=conversation_id, holder=holder, version=1,
                                     expires_at=now + timedelta(seconds=seconds))
            return Held(holder=holder, version=1, previous_holder="")
        except IntegrityError:
            row = _row(conversation_id)  # created concurrently by another process: take it as it is now
    current_holder, version, expires_at = row
    if current_holder and expires_at and expires_at > now and (only_free or current_holder != holder):
        return None
    taken = statements.TAKE_LEASE.execute(holder, version + 1, now + timedelta(seconds=seconds), conversation_id, version)
    if taken != 1:
        return None
    previous = current_holder if current_holder != holder else ""
    return Held(holder=holder, version=version + 1, previous_holder=previous)


def renew(*, conversation_id: str, held: Held, now: datetime, seconds: float) -> bool:
    """Extend a held lease; False when it was lost."""
    return statements.RENEW_LEASE.execute(now + timedelta(seconds=seconds), conversation_id, held.holder, held.version) == 1


def release(*, conversation_id: str, held: Held) -> None:
    """Give the lease up so the next writer need not wait for it to expire."""
    statements.RELEASE_LEASE.execute(*releasing(conversation_id=conversation_id, held=held)[1])


def releasing(*, conversation_id: str, held: Held) -> tuple[Statement, tuple]:
    """`release` as a statement and its values, for a commit that sends it with others (`store.commit_optimistic`)."""
    return statements.RELEASE_LEASE, (conversation_id, held.holder, held.version)


def _row(conversation_id: str) -> tuple[str, int, datetime | None] | None:
    found = statements.LEASE.rows(conversation_id)
    return found[0] if found else None
