"""
A bounded loopback load test: many customers doing turns against several Daphne processes.

Each customer starts its conversation with the home page form on one server, watches it over a
websocket on another (so every push crosses processes through Redis), sends its next messages with
the customer page form and waits for each reply on its socket. Used by `make bench` (200 customers)
and by tests/reliability (20). Only loopback addresses are used; every wait has a deadline.

Two ways to be a customer:
- the JSON socket (`format=json`) and plain form posts, each socket's last state compared with the
  database at the end;
- the page path (`page=True`), what a browser on the customer page does: the conversation page
  is loaded, its socket is the page's (`format=html`), each message is sent as htmx sends it
  (with the page's `expected_seq`), and a reply counts once its message block has arrived. Any app with
  that page shape can be driven so; `make bench` drives Waypoint and the floor app (bench/floor).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

import httpx
import psycopg
import websockets

# A reply waits behind every other customer's turn: 200 customers at a few turns/s take minutes.
REPLY_TIMEOUT = 180.0
CONNECT_ATTEMPTS = 5
# Handshakes in flight at once: Daphne drops one it cannot finish within 5 s, as a loaded 2-core
# machine may when hundreds arrive in the same instant; pages reconnect, and so do these customers.
HANDSHAKES = 16
IN_FLIGHT = 24  # HTTP requests in flight per server
CONFLICT_RETRIES = 3


@dataclass
class Customer:
    index: int
    conversation_id: str = ""
    token: str = ""
    last_state: dict = field(default_factory=dict)
    last_seq: int = -1
    pushes: int = 0
    reconnects: int = 0
    turn_seconds: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    # The page path: the message ids shown so far, by role, and the page's expected_seq.
    shown: dict[str, set[str]] = field(default_factory=lambda: {"user": set(), "assistant": set()})
    expected_seq: str | None = None
    conflicts: int = 0


@dataclass
class LoadReport:
    customers: int
    turns: int
    seconds: float
    errors: list[str]
    lost: list[str]  # replies a socket never showed, or final states that differ from the database
    turn_seconds: list[float]
    pushes: int
    reconnects: int = 0
    conflicts: int = 0  # sends answered 409 (sent again after the next push, as a person would)

    @property
    def turns_per_second(self) -> float:
        return self.turns / self.seconds if self.seconds else 0.0


async def _csrf(client: httpx.AsyncClient) -> str:
    page = await client.get("/")
    page.raise_for_status()
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    if not found:
        raise RuntimeError("the home page has no start form (is there an assistant?)")
    return found.group(1)


async def _watch(customer: Customer, socket) -> None:
    async for raw in socket:
        message = json.loads(raw)
        if message.get("type") != "state":
            continue  # drafts are transient
        customer.last_state = message["state"]
        customer.last_seq = message["seq"]
        customer.pushes += 1
        customer.changed.set()


# A message block of the page (a <div> in the log) or of the floor app (an <li>).
MESSAGE = re.compile(r'<(?:div|li) id="message-([^"]+)" class="message (user|assistant)\b')
SEQ = re.compile(r'data-seq="(\d+)"')
EXPECTED_SEQ = re.compile(r'name="expected_seq" value="(\d+)"')


def _read_page(customer: Customer, html: str) -> None:
    """Take in what a page or an HTML push shows: its message blocks and its head seq."""
    for message_id, role in MESSAGE.findall(html):
        customer.shown[role].add(message_id)
    if seq := SEQ.findall(html):
        customer.last_seq = max(customer.last_seq, int(seq[-1]))
        if customer.expected_seq is not None:
            customer.expected_seq = str(customer.last_seq)  # as page.js updates the form's expected_seq


async def _watch_page(customer: Customer, socket) -> None:
    async for raw in socket:
        _read_page(customer, raw)
        customer.pushes += 1
        customer.changed.set()


async def _until(customer: Customer, predicate, *, what: str) -> bool:
    deadline = time.monotonic() + REPLY_TIMEOUT
    while not predicate(customer):
        left = deadline - time.monotonic()
        if left <= 0:
            customer.errors.append(f"customer {customer.index}: timed out waiting for {what}")
            return False
        customer.changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(customer.changed.wait(), timeout=left)
    return True


def _replied(count: int):
    return lambda c: len(c.last_state.get("messages", [])) >= count and c.last_state.get("run_status") == "completed"


def _page_replied(count: int):
    return lambda c: len(c.shown["assistant"]) >= count // 2


async def _open_socket(customer: Customer, url: str, origin: str, gate: asyncio.Semaphore):
    """Open the customer's websocket, reconnecting as the page does when a handshake is dropped."""
    for attempt in range(CONNECT_ATTEMPTS):
        try:
            async with gate:
                # No pings from this end: a browser sends none either (Daphne pings, and it is answered).
                return await websockets.connect(url, origin=origin, open_timeout=30, max_size=None, ping_interval=None)
        except (OSError, websockets.exceptions.InvalidHandshake, websockets.exceptions.InvalidMessage, TimeoutError) as exc:
            customer.reconnects += 1
            last = exc
            await asyncio.sleep(0.2 * 2**attempt)
    customer.errors.append(f"customer {customer.index}: websocket not opened after {CONNECT_ATTEMPTS} attempts: {last!r}")
    return None


async def _watching(customer: Customer, socket, *, url: str, origin: str, gate: asyncio.Semaphore, page: bool) -> None:
    """Watch the customer's socket; on the page path, open it again when the server closes it, as page.js does."""
    while True:
        async with socket:
            with contextlib.suppress(websockets.exceptions.ConnectionClosed):
                await (_watch_page if page else _watch)(customer, socket)
        if not page:
            return
        customer.reconnects += 1
        await asyncio.sleep(0.5)
        socket = await _open_socket(customer, url, origin, gate)
        if socket is None:
            return


async def _send(customer: Customer, posts: httpx.AsyncClient, text: str, *, page: bool) -> bool:
    """Send one message as the page's form does; False (and why, in `errors`) if it was refused."""
    url = f"/c/{customer.conversation_id}/send"
    for _ in range(CONFLICT_RETRIES + 1):
        data = {"token": customer.token, "message": text}
        if not page:
            response = await posts.post(url, data=data)
            if response.status_code == 302:
                return True
        else:
            if customer.expected_seq is not None:
                data["expected_seq"] = customer.expected_seq
            seen = customer.last_seq
            response = await posts.post(url, data=data, headers={"HX-Request": "true"})
            if response.status_code in (200, 204):
                _read_page(customer, response.text)  # htmx swaps what the reply carries into the page
                return True
            if response.status_code == 409:
                # "New messages arrived while you were typing": the person reads them and sends again.
                customer.conflicts += 1
                await _until(customer, lambda c, seen=seen: c.last_seq > seen, what="the push after a conflict")
                continue
        break
    customer.errors.append(f"customer {customer.index}: send answered {response.status_code}")
    return False


async def _customer(customer: Customer, *, posts: httpx.AsyncClient, watch_url: str, origin: str, assistant_id: str,
                    csrf: str, turns: int, message: str, gate: asyncio.Semaphore, everyone_done: asyncio.Event,
                    converged: asyncio.Event, page: bool) -> None:
    began = time.perf_counter()
    response = await posts.post("/start", data={"assistant": assistant_id, "message": f"{message} #{customer.index}.0",
                                                "csrfmiddlewaretoken": csrf})
    if response.status_code != 302:
        customer.errors.append(f"customer {customer.index}: start answered {response.status_code}")
        return
    location = urlsplit(response.headers["location"])
    customer.conversation_id = location.path.rstrip("/").split("/")[-1]
    customer.token = parse_qs(location.query)["token"][0]
    replied = _page_replied if page else _replied
    if page:
        shown = await posts.get(response.headers["location"])
        if shown.status_code != 200:
            customer.errors.append(f"customer {customer.index}: the conversation page answered {shown.status_code}")
            return
        if found := EXPECTED_SEQ.search(shown.text):
            customer.expected_seq = found.group(1)
        _read_page(customer, shown.text)
    url = f"{watch_url}/ws/conversations/{customer.conversation_id}/?token={customer.token}&format={'html' if page else 'json'}"
    socket = await _open_socket(customer, url, origin, gate)
    if socket is None:
        return
    watcher = asyncio.create_task(_watching(customer, socket, url=url, origin=origin, gate=gate, page=page))
    try:
        if not await _until(customer, replied(2), what="the first reply"):
            return
        customer.turn_seconds.append(time.perf_counter() - began)
        for turn in range(1, turns):
            began = time.perf_counter()
            if not await _send(customer, posts, f"{message} #{customer.index}.{turn}", page=page):
                return
            if not await _until(customer, replied(2 * (turn + 1)), what=f"the reply to turn {turn}"):
                return
            customer.turn_seconds.append(time.perf_counter() - began)
        # Keep watching until every customer is done, so each socket's last state can be
        # compared with the database once nothing moves any more.
        await everyone_done.wait()
        await converged.wait()
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher


def _database_truth(database_url: str, conversation_ids: list[str]) -> dict[str, tuple[int, list[str], str]]:
    with psycopg.connect(database_url, autocommit=True) as conn:
        heads = dict(conn.execute("SELECT id::text, head_seq FROM conversations WHERE id::text = ANY(%s)", (conversation_ids,)).fetchall())
        last_kinds = dict(conn.execute(
            "SELECT DISTINCT ON (conversation_id) conversation_id::text, kind FROM ledger_event "
            "WHERE conversation_id::text = ANY(%s) ORDER BY conversation_id, seq DESC", (conversation_ids,)).fetchall())
        texts: dict[str, list[str]] = {cid: [] for cid in conversation_ids}
        for cid, text in conn.execute(
            "SELECT conversation_id::text, text FROM chat_messages WHERE conversation_id::text = ANY(%s) ORDER BY conversation_id, seq",
            (conversation_ids,),
        ):
            texts[cid].append(text)
    return {cid: (heads.get(cid, -1), texts[cid], last_kinds.get(cid, "")) for cid in conversation_ids}


async def _all_turns_done(people: list[Customer], tasks: list[asyncio.Task], turns: int) -> None:
    """Wait until every customer has its replies or has given up (each wait has its own deadline)."""
    while not all(len(p.turn_seconds) == turns or p.errors or t.done() for p, t in zip(people, tasks, strict=True)):
        await asyncio.sleep(0.2)


async def _converge(people: list[Customer], database_url: str, *, seconds: float = 15.0) -> dict:
    """Give open sockets up to `seconds` to show the database's final state; return that state."""
    deadline = time.monotonic() + seconds
    ids = [p.conversation_id for p in people if p.conversation_id]
    while True:
        truth = await asyncio.to_thread(_database_truth, database_url, ids)
        behind = [p for p in people if p.conversation_id and p.last_seq != truth[p.conversation_id][0]]
        if not behind or time.monotonic() > deadline:
            return truth
        await asyncio.sleep(0.2)


async def run_load(*, servers: list[str], database_url: str, assistant_id: str, customers: int, turns: int,
                   message: str = "where is my order", page: bool = False) -> LoadReport:
    """
    Run `customers` customers of `turns` turns each; customer i posts to server i and watches on server i+1.

    `servers` are base URLs (http://127.0.0.1:PORT). `page`: the page path (the module's docstring);
    its sockets are not compared with a database (`database_url` is unused), each customer's page
    must have shown all its messages. Returns what went wrong, never raises for it.
    """
    people = [Customer(index=i) for i in range(customers)]
    # Each request in flight holds a PostgreSQL connection in its Daphne process for as long as it
    # runs; capped per server, as a load balancer's per-backend connection limit does, so two
    # processes stay inside the database's max_connections (docs/scaling.md).
    limits = httpx.Limits(max_connections=IN_FLIGHT, max_keepalive_connections=IN_FLIGHT)
    clients = [httpx.AsyncClient(base_url=url, timeout=REPLY_TIMEOUT, limits=limits) for url in servers]
    began = time.perf_counter()
    try:
        tokens = [await _csrf(c) for c in clients]
        gate = asyncio.Semaphore(HANDSHAKES)
        everyone_done, converged = asyncio.Event(), asyncio.Event()
        jobs = []
        for person in people:
            post_at = person.index % len(servers)
            watch_at = (person.index + 1) % len(servers)
            watch = servers[watch_at].replace("http://", "ws://")
            jobs.append(_customer(person, posts=clients[post_at], watch_url=watch, origin=servers[watch_at],
                                  assistant_id=assistant_id, csrf=tokens[post_at], turns=turns, message=message, gate=gate,
                                  everyone_done=everyone_done, converged=converged, page=page))
        tasks = [asyncio.create_task(job) for job in jobs]
        running = asyncio.gather(*tasks, return_exceptions=True)
        await _all_turns_done(people, tasks, turns)
        seconds = time.perf_counter() - began
        everyone_done.set()
        truth = {} if page else await _converge(people, database_url)
        converged.set()
        outcomes = await running
    finally:
        for c in clients:
            await c.aclose()
    errors = [e for p in people for e in p.errors]
    errors += [f"customer {i}: {type(o).__name__}: {o}" for i, o in enumerate(outcomes) if isinstance(o, BaseException)]
    lost = []
    started = [p for p in people if p.conversation_id]
    for p in started:
        if page:
            if len(p.shown["user"]) != turns or len(p.shown["assistant"]) != turns:
                lost.append(f"customer {p.index}: the page showed {len(p.shown['user'])} messages of the customer's and "
                            f"{len(p.shown['assistant'])} replies, expected {turns} each")
            continue
        head, texts, last_kind = truth[p.conversation_id]
        shown = [m["text"] for m in p.last_state.get("messages", [])]
        if p.last_seq != head or shown != texts:
            lost.append(f"customer {p.index}: socket shows seq {p.last_seq} and {len(shown)} messages, "
                        f"the database has seq {head} (last entry {last_kind}) and {len(texts)}")
        if len(texts) != 2 * turns:
            lost.append(f"customer {p.index}: {len(texts)} messages stored, expected {2 * turns}")
    return LoadReport(
        customers=customers, turns=sum(len(p.turn_seconds) for p in people), seconds=seconds, errors=errors, lost=lost,
        turn_seconds=[s for p in people for s in p.turn_seconds], pushes=sum(p.pushes for p in people),
        reconnects=sum(p.reconnects for p in people), conflicts=sum(p.conflicts for p in people),
    )
