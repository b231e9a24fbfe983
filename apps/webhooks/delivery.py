"""
Sending the outbox: one dispatcher per process claims due deliveries and makes their attempts at once.

A claim moves the row's `next_attempt_at` past the time an attempt may take and marks its endpoint
busy until then, in one short transaction (`FOR UPDATE SKIP LOCKED` on PostgreSQL, so processes
sharing a database never take the same row). An endpoint has at most one attempt in flight, so a
receiver that hangs holds one claim, not the workers: the dispatcher's attempts are coroutines
with a total deadline each (connect to last byte), and other endpoints' rows are taken meanwhile.
A process killed mid-attempt leaves the row and the endpoint to be claimed again once the claim
lapses, and the receiver gets it with the same `webhook-id`. Nothing here touches a conversation
or its lease.

The dispatcher sleeps until the next row falls due. A commit that writes deliveries wakes it: in
the process through `wake()`, across processes through PostgreSQL's NOTIFY, sent by a trigger on
the outbox table when the inserting transaction commits.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta

import httpx
from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.db.models import Min, Q
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from apps.actions.outgoing import AddressRefused, outgoing_async_client
from apps.conversations import faults
from apps.webhooks.models import WebhookDelivery, WebhookEndpoint

log = logging.getLogger(__name__)

# Seconds after each failed attempt before the next: the Standard Webhooks schedule.
DEFAULT_SCHEDULE = (5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400)
FIRST_BYTES = 200  # what the staff panel shows of an answer
READ_LIMIT = 4096  # what is read of an answer at all
RETRY_AFTER_STATUSES = {429, 502, 503, 504}
# The least a claim outlives its attempt's deadline: the outcome is recorded after the deadline.
MIN_CLAIM_MARGIN_SECONDS = 2.0
NOTIFY_CHANNEL = "waypoint_webhooks"

_started = threading.Event()


@dataclass(frozen=True)
class Claim:
    """A delivery taken for one attempt, and when the claim on it and its endpoint lapses."""

    delivery: WebhookDelivery
    until: datetime


# A delivery keeps its last MAX_HISTORY attempts (the retry schedule has ten), each with its answer's first bytes.
MAX_HISTORY = 20
HISTORY_BYTES = 200


@dataclass(frozen=True)
class Answer:
    """What one attempt got: the status code (None: no answer), the answer's first bytes, its Retry-After."""

    status_code: int | None
    text: str
    retry_after: int = 0


def schedule() -> tuple[int, ...]:
    text = settings.WAYPOINT_WEBHOOK_RETRY_SCHEDULE
    return tuple(int(float(s)) for s in text.split(",") if s.strip()) if text else DEFAULT_SCHEDULE


def deadline() -> float:
    """Seconds one attempt may take in all, from connecting to the last byte read."""
    return settings.WAYPOINT_WEBHOOK_TIMEOUT_SECONDS


def claim_window() -> timedelta:
    margin = max(settings.WAYPOINT_WEBHOOK_CLAIM_MARGIN_SECONDS, MIN_CLAIM_MARGIN_SECONDS)
    return timedelta(seconds=deadline() + margin)


def _free(now: datetime) -> Q:
    return Q(busy_until__isnull=True) | Q(busy_until__lte=now)


def claim(*, now: datetime | None = None) -> Claim | None:
    """
    Take the most overdue delivery whose endpoint has no attempt in flight, for one attempt.

    One at a time: the claim lasts one attempt's time, so a row waiting behind others in a batch
    would lapse and be sent twice. The updates are conditional as well as locked, so a database
    without row locks (SQLite) cannot hand one row or endpoint to two claims either.
    """
    now = now or timezone.now()
    until = now + claim_window()
    skipped: list[str] = []
    for _ in range(8):
        with transaction.atomic():
            due = (
                WebhookDelivery.objects.select_for_update(skip_locked=True, of=("self",))
                .filter(status="pending", next_attempt_at__lte=now)
                .filter(Q(endpoint__busy_until__isnull=True) | Q(endpoint__busy_until__lte=now))
                .exclude(endpoint_id__in=skipped)
                .select_related("endpoint")
                .order_by("next_attempt_at")
                .first()
            )
            if due is None:
                return None
            took_endpoint = WebhookEndpoint.objects.filter(_free(now), pk=due.endpoint_id).update(busy_until=until)
            took_row = took_endpoint and WebhookDelivery.objects.filter(
                pk=due.pk, status="pending", next_attempt_at__lte=now,
            ).update(next_attempt_at=until)
            if took_row:
                due.next_attempt_at = due.endpoint.busy_until = until
                return Claim(due, until)
            transaction.set_rollback(True)
        skipped.append(due.endpoint_id)  # another process took its endpoint first: look past it
    return None


def envelope(delivery: WebhookDelivery) -> str:
    data = {"conversation_id": delivery.conversation_id, "assistant": delivery.assistant, "seq": delivery.seq}
    data.update(json.loads(delivery.data))
    return json.dumps({"type": delivery.type, "timestamp": delivery.timestamp, "data": data}, ensure_ascii=False)


def refused(claimed: Claim) -> str:
    """Why this claim is not attempted at all ("" when it is): its endpoint is gone or disabled."""
    endpoint = claimed.delivery.endpoint
    if endpoint.deleted_at is not None:
        return "the endpoint was deleted"
    return "" if endpoint.enabled else "the endpoint is disabled"


async def attempt(claimed: Claim) -> Answer:
    """POST the event once, within the attempt's deadline; no database access, so attempts run side by side."""
    delivery = claimed.delivery
    url, secret = delivery.endpoint.url, delivery.endpoint.secret
    now = timezone.now()
    body = envelope(delivery)
    headers = {
        "content-type": "application/json",
        "webhook-id": delivery.webhook_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": Webhook(secret).sign(delivery.webhook_id, now, body),
        "user-agent": "Waypoint-Webhooks/1",
    }
    limit = deadline()
    answered: httpx.Response | None = None
    got = bytearray()
    try:
        # The deadline covers the whole attempt: httpx's own timeouts are per read, and a receiver
        # that drips a byte at a time never trips them.
        async with (
            asyncio.timeout(limit),
            outgoing_async_client(timeout=limit) as client,
            client.stream("POST", url, content=body.encode(), headers=headers) as response,
        ):
            answered = response
            async for chunk in response.aiter_bytes():
                got += chunk
                if len(got) >= READ_LIMIT:
                    break
    except AddressRefused as exc:  # checked on every connection: a name may resolve elsewhere by now
        return Answer(None, f"refused: {exc}")
    except TimeoutError:
        if answered is None:
            return Answer(None, f"no answer within {limit:g} s")
    except (httpx.HTTPError, OSError) as exc:
        if answered is None:
            return Answer(None, f"no answer: {type(exc).__name__}")
    # An answer cut off while its body was read still answered.
    text = bytes(got[:READ_LIMIT]).decode("utf-8", "replace")
    return Answer(answered.status_code, text, _retry_after(answered.headers.get("retry-after", "")))


def record(claimed: Claim, answer: Answer, *, now: datetime | None = None) -> None:
    """
    Record one attempt's outcome (delivered, due again later, or failed) and free its endpoint.

    A retry's wait counts from the attempt's end, `now`: counted from its start, a timed-out
    attempt would be due again as soon as it ended.
    """
    faults.reach("after_webhook_sent")
    now = now or timezone.now()
    delivery, code = claimed.delivery, answer.status_code
    delivery.attempts += 1
    delivery.history = [*delivery.history, {"at": now.isoformat(), "status_code": code, "response": answer.text[:HISTORY_BYTES]}][-MAX_HISTORY:]
    if code is not None and 200 <= code < 300:
        _finish(claimed, "delivered", code, answer.text)
    elif code == 410:
        endpoint = delivery.endpoint
        endpoint.enabled = False
        endpoint.disabled_reason = "the endpoint answered 410 Gone"
        endpoint.save(update_fields=["enabled", "disabled_reason"])
        _finish(claimed, "failed", code, answer.text)
    elif delivery.attempts > len(waits := schedule()):
        _finish(claimed, "failed", code, answer.text)
    else:
        wait = waits[delivery.attempts - 1]
        if code in RETRY_AFTER_STATUSES and answer.retry_after:
            wait = max(wait, answer.retry_after)
        _finish(claimed, "pending", code, answer.text, next_attempt_at=now + timedelta(seconds=wait))


def _finish(claimed: Claim, status: str, code: int | None, answer: str, *, next_attempt_at: datetime | None = None) -> None:
    delivery = claimed.delivery
    delivery.status, delivery.last_status_code, delivery.last_response = status, code, answer[:FIRST_BYTES]
    delivery.next_attempt_at = next_attempt_at
    with transaction.atomic():
        delivery.save(update_fields=["status", "attempts", "last_status_code", "last_response", "next_attempt_at", "history"])
        # Only this claim's mark: one that lapsed and was taken again belongs to its new attempt.
        WebhookEndpoint.objects.filter(pk=delivery.endpoint_id, busy_until=claimed.until).update(busy_until=None)


def _retry_after(value: str) -> int:
    try:
        return max(0, int(value.strip()))
    except ValueError:
        return 0


def deliver_due(limit: int = 10) -> int:
    """
    Attempt what is due, up to `limit` deliveries, and record each; returns how many were attempted.

    For tests and commands: the server's dispatcher does the same continuously. Each round claims
    one row per free endpoint and attempts them side by side; the next round takes the rows that
    waited behind them.
    """
    done = 0
    while done < limit:
        claims: list[Claim] = []
        while done + len(claims) < limit and (claimed := claim()) is not None:
            claims.append(claimed)
        if not claims:
            break
        done += len(claims)
        live = []
        for claimed in claims:
            if why := refused(claimed):
                _finish(claimed, "failed", None, why)
            else:
                live.append(claimed)

        async def attempts(live=live) -> list[Answer]:
            return await asyncio.gather(*(attempt(c) for c in live))

        for claimed, answer in zip(live, asyncio.run(attempts()) if live else [], strict=True):
            try:
                record(claimed, answer)
            except Exception:
                log.exception("webhook delivery %s failed", claimed.delivery.webhook_id)
    return done


def seconds_until_due(*, now: datetime | None = None) -> float | None:
    """How long until a row may next be claimed: the next retry, or the end of a claim that holds due rows."""
    now = now or timezone.now()
    next_row = WebhookDelivery.objects.filter(status="pending", next_attempt_at__gt=now).aggregate(at=Min("next_attempt_at"))["at"]
    next_free = WebhookEndpoint.objects.filter(busy_until__gt=now).aggregate(at=Min("busy_until"))["at"]
    times = [t for t in (next_row, next_free) if t is not None]
    return max(0.0, (min(times) - now).total_seconds()) if times else None


# --- the dispatcher -----------------------------------------------------------------------------


class _Dispatcher:
    """
    This process's sender: an event loop on a thread of its own, with one more thread for the database.

    It claims due rows while it has room (`WAYPOINT_WEBHOOK_WORKERS` attempts in flight), then
    sleeps until the next row falls due, an attempt ends or a commit wakes it.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.loop: asyncio.AbstractEventLoop | None = None
        self.stirred: asyncio.Event | None = None
        self.database = ThreadPoolExecutor(max_workers=1, thread_name_prefix="waypoint-webhooks-db")
        self.ready = threading.Event()
        self.stopping = False

    def wake(self) -> None:
        if self.loop is not None and self.stirred is not None:
            self.loop.call_soon_threadsafe(self.stirred.set)

    def run(self) -> None:
        asyncio.run(self._main())

    def stop(self) -> None:
        """End the loop at its next wake; attempts still in flight are cancelled, their claims left to lapse."""
        self.stopping = True
        self.wake()

    async def _db(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(self.database, _closing(fn), *args)

    async def _main(self) -> None:
        self.loop, self.stirred = asyncio.get_running_loop(), asyncio.Event()
        self.ready.set()
        flights: set[asyncio.Task] = set()
        while not self.stopping:
            self.stirred.clear()
            wait: float | None = settings.WAYPOINT_WEBHOOK_POLL_SECONDS  # the longest it sleeps
            try:
                while len(flights) < self.capacity and (claimed := await self._db(claim)) is not None:
                    flight = asyncio.create_task(self._fly(claimed))
                    flights.add(flight)
                    flight.add_done_callback(flights.discard)
                if len(flights) >= self.capacity:
                    wait = None  # full: the end of an attempt stirs it
                elif (due := await self._db(seconds_until_due)) is not None:
                    wait = min(wait, due)
            except Exception:
                log.exception("webhook delivery pass failed")
            try:
                async with asyncio.timeout(wait):
                    await self.stirred.wait()
            except TimeoutError:
                pass

    async def _fly(self, claimed: Claim) -> None:
        try:
            if why := refused(claimed):
                await self._db(_finish, claimed, "failed", None, why)
            else:
                await self._db(record, claimed, await attempt(claimed))
        except Exception:
            log.exception("webhook delivery %s failed", claimed.delivery.webhook_id)
        finally:
            self.stirred.set()  # its endpoint is free: a row behind it may be due


def _closing(fn):
    def run(*args):
        close_old_connections()
        try:
            return fn(*args)
        finally:
            connection.close()

    return run


_dispatcher: _Dispatcher | None = None


def wake() -> None:
    """Have this process's dispatcher look now instead of when the next row falls due."""
    if _dispatcher is not None:
        _dispatcher.wake()


def start() -> None:
    """Start this process's dispatcher (once), and its ear for other processes' commits; called when the ASGI application loads."""
    global _dispatcher
    if _started.is_set() or not settings.WAYPOINT_WEBHOOK_WORKERS:
        return
    _started.set()
    _dispatcher = _Dispatcher(settings.WAYPOINT_WEBHOOK_WORKERS)
    threading.Thread(target=_dispatcher.run, daemon=True, name="waypoint-webhooks").start()
    if connection.vendor == "postgresql":
        threading.Thread(target=_listen, daemon=True, name="waypoint-webhooks-listen").start()


def _listen() -> None:
    """Wake the dispatcher on every commit that wrote deliveries, in any process (LISTEN/NOTIFY)."""
    import psycopg

    params = {k: v for k, v in connection.get_connection_params().items()
              if k not in ("cursor_factory", "context", "prepare_threshold")}
    while True:
        try:
            with psycopg.connect(**params, autocommit=True) as listening:
                listening.execute(f"LISTEN {NOTIFY_CHANNEL}")
                wake()  # what was committed while nobody listened
                for _ in listening.notifies():
                    wake()
        except Exception:
            log.warning("webhook wake-ups are not heard; retrying in 5 s", exc_info=True)
        time.sleep(5)
