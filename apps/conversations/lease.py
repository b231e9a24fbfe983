"""
The per-conversation writer lease across server processes.

Version-checked like a Kubernetes lease: every write is a conditional UPDATE on the version read
just before, so two processes can never both believe they hold it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction

from apps.conversations.models import Lease


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
    row = Lease.objects.filter(conversation_id=conversation_id).values("holder", "version", "expires_at").first()
    if row is None:
        try:
            with transaction.atomic():
                Lease.objects.get_or_create(conversation_id=conversation_id)
        except IntegrityError:
            pass  # created concurrently by another process: fine
        row = Lease.objects.filter(conversation_id=conversation_id).values("holder", "version", "expires_at").get()
    if row["holder"] and row["holder"] != holder and row["expires_at"] and row["expires_at"] > now:
        return None
    taken = Lease.objects.filter(conversation_id=conversation_id, version=row["version"]).update(
        holder=holder, version=row["version"] + 1, expires_at=now + timedelta(seconds=seconds)
    )
    if taken != 1:
        return None
    previous = row["holder"] if row["holder"] != holder else ""
    return Held(holder=holder, version=row["version"] + 1, previous_holder=previous)


def renew(*, conversation_id: str, held: Held, now: datetime, seconds: float) -> bool:
    """Extend a held lease; False when it was lost."""
    return (
        Lease.objects.filter(conversation_id=conversation_id, holder=held.holder, version=held.version).update(
            expires_at=now + timedelta(seconds=seconds)
        )
        == 1
    )


def release(*, conversation_id: str, held: Held) -> None:
    """Give the lease up so the next writer need not wait for it to expire."""
    Lease.objects.filter(conversation_id=conversation_id, holder=held.holder, version=held.version).update(
        holder="", expires_at=None
    )
