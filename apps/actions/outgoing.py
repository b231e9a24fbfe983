"""
The HTTP clients of outgoing calls: each connection resolves its host, checks every address and
connects only to a checked one.

A check made before the call is not enough: the name is resolved again when the client connects,
and a name whose answer changes in between (DNS rebinding, a TTL of zero) would reach a private
address that the check never saw. So the check sits in the client's network backend (httpcore's),
which resolves once, refuses the host if any of its addresses is refused
(`apps.actions.targets.refusal`), and connects to the address it checked. TLS still names and
verifies the host: httpcore starts it with the URL's host name, not the address.

The clients ignore proxy settings of the environment (a proxy would resolve the name itself,
beyond the check) and follow no redirects (each hop would be a call nobody checked by URL).
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterable

import anyio
import httpcore
import httpx
from django.conf import settings

from apps.actions.targets import IPAddress, addresses_of, refused_addresses


class AddressRefused(httpx.ConnectError):
    """The host resolved to an address outgoing calls may not reach; the message says which and why."""


def _checked(host: str, infos: list[tuple], *, allow_private: bool) -> list[IPAddress]:
    addresses = addresses_of(infos)
    if not addresses:
        raise httpcore.ConnectError(f"{host} does not resolve")
    if not allow_private and (why := refused_addresses(host, addresses)):
        raise AddressRefused(why)
    return addresses


class CheckedBackend(httpcore.NetworkBackend):
    """A network backend that connects only to addresses of the host that pass the address rules."""

    def __init__(self, *, allow_private: bool) -> None:
        self.allow_private = allow_private
        self.inner = httpcore.SyncBackend()

    def connect_tcp(
        self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            raise httpcore.ConnectError(f"{host} does not resolve") from exc
        failure: Exception = httpcore.ConnectError(f"{host} has no address")
        for address in _checked(host, infos, allow_private=self.allow_private):
            try:
                return self.inner.connect_tcp(str(address), port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc  # the next address may answer, as socket.create_connection does
        raise failure

    def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options=None) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("outgoing calls do not use unix sockets")

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


class AsyncCheckedBackend(httpcore.AsyncNetworkBackend):
    """
    `CheckedBackend` for asyncio (and trio) clients.

    `core`: the httpcore module whose backend and errors it uses (httpcore, or httpcore2 under the
    `mcp` package's httpx2 clients); the checks are the same.
    """

    def __init__(self, *, allow_private: bool, core=httpcore) -> None:
        self.allow_private = allow_private
        self.core = core
        self.inner = core.AnyIOBackend()

    async def connect_tcp(
        self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            with anyio.fail_after(timeout):
                infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except TimeoutError as exc:
            raise self.core.ConnectTimeout(f"{host} did not resolve in time") from exc
        except (OSError, UnicodeError) as exc:
            raise self.core.ConnectError(f"{host} does not resolve") from exc
        failure: Exception = self.core.ConnectError(f"{host} has no address")
        for address in _checked(host, list(infos), allow_private=self.allow_private):
            try:
                return await self.inner.connect_tcp(str(address), port, timeout, local_address, socket_options)
            except (self.core.ConnectError, self.core.ConnectTimeout) as exc:
                failure = exc
        raise failure

    async def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options=None) -> httpcore.AsyncNetworkStream:
        raise self.core.ConnectError("outgoing calls do not use unix sockets")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


class CheckedTransport(httpx.HTTPTransport):
    """httpx's transport on a `CheckedBackend`: every connection it opens is checked."""

    def __init__(self, *, allow_private: bool, ssl_context: ssl.SSLContext | None = None) -> None:
        limits = httpx.Limits()
        # httpx's own __init__ takes no network backend, so the pool is built here as it builds it.
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context or httpx.create_ssl_context(),
            max_connections=limits.max_connections, max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry, network_backend=CheckedBackend(allow_private=allow_private),
        )


class AsyncCheckedTransport(httpx.AsyncHTTPTransport):
    """httpx's async transport on an `AsyncCheckedBackend`."""

    def __init__(self, *, allow_private: bool, ssl_context: ssl.SSLContext | None = None) -> None:
        limits = httpx.Limits()
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context or httpx.create_ssl_context(),
            max_connections=limits.max_connections, max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry, network_backend=AsyncCheckedBackend(allow_private=allow_private),
        )


def _allow_private(allow_private: bool | None) -> bool:
    return settings.WAYPOINT_WEBHOOK_ALLOW_PRIVATE if allow_private is None else allow_private


def outgoing_client(
    *, timeout: float | httpx.Timeout, allow_private: bool | None = None, ssl_context: ssl.SSLContext | None = None,
) -> httpx.Client:
    """
    Build the client for an outgoing call to a URL an API caller gave (a webhook action, a tool source).

    Every connection is checked by `apps.actions.targets` (refused: `AddressRefused`, an
    `httpx.ConnectError`); redirects are not followed and the environment's proxies are not used.
    `allow_private`: None follows `WAYPOINT_WEBHOOK_ALLOW_PRIVATE`; `ssl_context`: the certificates
    to trust, None for the system's. Use it as a context manager.
    """
    return httpx.Client(
        transport=CheckedTransport(allow_private=_allow_private(allow_private), ssl_context=ssl_context),
        timeout=timeout, follow_redirects=False, trust_env=False,
    )


def outgoing_async_client(
    *, timeout: float | httpx.Timeout, allow_private: bool | None = None, ssl_context: ssl.SSLContext | None = None,
) -> httpx.AsyncClient:
    """
    Build the asyncio client for outgoing calls (webhook deliveries): `outgoing_client`'s checks, async.

    Same arguments as `outgoing_client`. Use it as an async context manager.
    """
    return httpx.AsyncClient(
        transport=AsyncCheckedTransport(allow_private=_allow_private(allow_private), ssl_context=ssl_context),
        timeout=timeout, follow_redirects=False, trust_env=False,
    )
