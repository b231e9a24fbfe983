"""
This process's name as a lease holder, and the one thread that renews the leases its drives hold.

A drive holds its conversation's lease (`apps/conversations/lease.py`) while its steps run; a slow
model or action would outlive a lease nobody renews, and another process would take the
conversation from a writer that is still alive.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import socket
import threading
import time

from django.conf import settings
from django.db import connection
from django.utils import timezone

from apps.conversations import lease

log = logging.getLogger(__name__)

HOLDER = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


class Renewals:
    """
    Renews the leases this process's drives hold while their steps run (a slow model or action).

    One thread for all of them: a thread started and joined per drive cost about half a
    millisecond a turn, and most drives end before their first renewal is due. A renewal that
    finds the lease gone (released, or taken by another writer) stops renewing it; the drive
    learns of the loss from its next commit, which checks the lease.
    """

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._due: dict[str, tuple[lease.Held, float]] = {}  # conversation -> (its lease, when to renew it)
        self._wakes_at = float("inf")
        self._thread: threading.Thread | None = None
        self._pid = 0

    def keep(self, conversation_id: str, held: lease.Held) -> None:
        at = time.monotonic() + settings.WAYPOINT_LEASE_SECONDS / 3
        with self._changed:
            if self._pid != os.getpid():  # not started yet, or started in the process this one forked from
                self._pid = os.getpid()
                self._due.clear()  # a parent's drives are not this process's to keep
                self._thread = None
            if self._thread is None or not self._thread.is_alive():
                self._wakes_at = float("inf")
                self._thread = threading.Thread(target=self._run, daemon=True, name="lease-renewals")
                self._thread.start()
            self._due[conversation_id] = (held, at)
            if at < self._wakes_at:
                self._changed.notify()

    def drop(self, conversation_id: str) -> None:
        """Stop renewing; a renewal already sent meanwhile is harmless: it cannot outlive a release."""
        with self._changed:
            self._due.pop(conversation_id, None)

    def _run(self) -> None:
        while True:
            with self._changed:
                due = self._wait_for_due()
                period = settings.WAYPOINT_LEASE_SECONDS / 3
                for conversation_id, held in due:
                    self._due[conversation_id] = (held, time.monotonic() + period)
            try:
                for conversation_id, held in due:
                    self._renew(conversation_id, held)
                connection.close()  # no connection held between renewals, seconds apart
            except Exception:  # noqa: BLE001 - this thread renews every drive's lease: it must not end
                log.warning("a round of lease renewals failed", exc_info=True)

    def _wait_for_due(self) -> list[tuple[str, lease.Held]]:
        while True:
            now = time.monotonic()
            due = [(conversation_id, held) for conversation_id, (held, at) in self._due.items() if at <= now]
            if due:
                return due
            self._wakes_at = min((at for _, at in self._due.values()), default=float("inf"))
            self._changed.wait(None if self._wakes_at == float("inf") else self._wakes_at - now)
            self._wakes_at = float("inf")

    def _renew(self, conversation_id: str, held: lease.Held) -> None:
        try:
            ok = lease.renew(conversation_id=conversation_id, held=held, now=timezone.now(),
                             seconds=settings.WAYPOINT_LEASE_SECONDS)
        except Exception:  # noqa: BLE001 - one failed renewal must not let the lease lapse silently
            log.warning("renewing the lease of %s failed; trying again", conversation_id, exc_info=True)
            with contextlib.suppress(Exception):  # a broken connection is opened again for the next one
                connection.close()
            return
        if not ok:
            with self._changed:
                if self._due.get(conversation_id, (None,))[0] == held:
                    del self._due[conversation_id]


renewals = Renewals()
