"""
The addresses outgoing calls may reach, against SSRF (docs/webhooks.md "Addresses").

Webhook actions, outgoing webhooks and tool sources call URLs that API callers give; left
unchecked, such a URL reaches the server's own loopback, the cloud's metadata service or the
private network behind it. Only global unicast addresses are called, and an IPv4 address carried
inside an IPv6 one is judged as itself, since the network delivers it there.

Pure: no Django. `apps/actions/outgoing.py` applies `refusal` to every connection.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

MAX_URL_CHARS = 2000
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
# IPv4-compatible addresses (deprecated by RFC 4291, still routed by some stacks to the IPv4 inside).
COMPATIBLE = ipaddress.IPv6Network("::/96")
# Special-purpose ranges the ipaddress module of older Pythons calls global (fixed in 3.12.4 and
# 3.13): IETF protocol assignments, and IPv6 site-local unicast, deprecated but still routable.
NOT_GLOBAL = (ipaddress.IPv4Network("192.0.0.0/24"), ipaddress.IPv6Network("fec0::/10"))
_LABEL = re.compile(r"^[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$")
SIGNATURE_HINT = "receivers authenticate calls by their signature header, not by credentials in the URL"


class TargetError(ValueError):
    """A URL no outgoing call is made to; the message says why, without the URL's path or query."""


@dataclass(frozen=True)
class Target:
    """Where an outgoing call connects: the scheme, the host as the client sends it, the port."""

    scheme: str
    host: str
    port: int

    @property
    def address(self) -> IPAddress | None:
        """The host when it is an IP address literal, else None (a name, resolved per connection)."""
        return _literal(self.host)


def parse_target(url: object) -> Target:
    """
    Split an outgoing call's URL into what it connects to.

    Checked with both urllib's parser and httpx's (the one that connects), so the two never
    disagree on the host.
    :raises TargetError: not an http(s) URL with a host, malformed (brackets, port, spaces), or
        carrying a user name or password
    """
    if not isinstance(url, str) or not url:
        raise TargetError("the url must be an http(s) URL")
    if len(url) > MAX_URL_CHARS:
        raise TargetError(f"the url is longer than {MAX_URL_CHARS} characters")
    if any(c <= " " or c in "\x7f\\" for c in url):
        raise TargetError("the url may not contain spaces, control characters or backslashes")
    try:
        parts = urlsplit(url)
        port = parts.port
        parsed = httpx.URL(url)
    except (ValueError, httpx.InvalidURL) as exc:
        raise TargetError(f"the url is malformed: {_why_malformed(exc)}") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise TargetError("the url must be an http(s) URL")
    if parts.username is not None or parts.password is not None or parsed.userinfo:
        raise TargetError(f"the url may not carry a user name or password: {SIGNATURE_HINT}")
    host = parsed.raw_host.decode("ascii")
    if not host or not parts.hostname:
        raise TargetError("the url must have a host")
    if any(p is not None and not 1 <= p <= 65535 for p in (port, parsed.port)):
        raise TargetError("the url's port must be from 1 to 65535")
    if parts.netloc.split("@")[-1].startswith("["):
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise TargetError("the url's host is not a valid IPv6 address") from None
        if "%" in host:  # a zone ("%25eth0") names a link of this machine
            raise TargetError("the url's IPv6 address may not name a zone")
    elif not _is_host_name(host):
        raise TargetError("the url's host is not a valid host name")
    scheme = parsed.scheme
    return Target(scheme=scheme, host=host, port=parsed.port or (443 if scheme == "https" else 80))


def _why_malformed(exc: Exception) -> str:
    text = str(exc)
    if "port" in text.lower():
        return "its port must be a number from 1 to 65535"
    if "ipv6" in text.lower():
        return "its IPv6 address must be whole, in brackets"
    return "it cannot be parsed"


def _is_host_name(host: str) -> bool:
    labels = host.removesuffix(".").split(".")
    return len(host) <= 253 and all(_LABEL.match(label) for label in labels)


def embedded_ipv4(address: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, ...]:
    """
    Return the IPv4 addresses an IPv6 address carries: mapped, compatible, NAT64, 6to4, Teredo.

    Teredo carries two (its server and the client behind it); every other form one; a plain IPv6
    address none.
    """
    low32 = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.ipv4_mapped is not None:
        return (address.ipv4_mapped,)
    if address in NAT64 or address in COMPATIBLE:
        return (low32,)
    if address.sixtofour is not None:
        return (address.sixtofour,)
    if address.teredo is not None:
        return address.teredo
    return ()


def refusal(address: IPAddress) -> str:
    """
    Say why `address` is not called ("" when it may be): anything but global unicast is refused.

    An IPv6 address that carries an IPv4 one is judged by the IPv4 address alone.
    """
    if isinstance(address, ipaddress.IPv6Address):
        if address.scope_id:
            return "a link-local address"
        if address.is_loopback or address.is_unspecified:
            return "a loopback address" if address.is_loopback else "the unspecified address"
        for inner in embedded_ipv4(address):
            why = refusal(inner)
            if why:
                return f"an IPv6 address carrying {inner}, {why}"
        if embedded_ipv4(address):
            return ""
    if address.is_unspecified:
        return "the unspecified address"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_multicast:
        return "a multicast address"
    if address.is_reserved:
        return "a reserved address"
    if address.is_private or any(address in network for network in NOT_GLOBAL if network.version == address.version):
        return "a private address"
    if not address.is_global:
        return "an address that is not global"
    return ""


def resolve(host: str, port: int) -> list[IPAddress]:
    """
    Resolve a host (name or literal) to its addresses for a TCP connection, in the resolver's order.

    :raises TargetError: the host does not resolve
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OSError):
        raise TargetError(f"{host} does not resolve") from None
    return addresses_of(infos)


def addresses_of(infos: list[tuple]) -> list[IPAddress]:
    """The distinct addresses of getaddrinfo's answer, in its order."""
    found: list[IPAddress] = []
    for info in infos:
        raw = str(info[4][0])
        scope = info[4][3] if len(info[4]) == 4 else 0
        address = ipaddress.ip_address(f"{raw.split('%')[0]}%{scope}" if scope else raw.split("%")[0])
        if address not in found:
            found.append(address)
    return found


def refused_addresses(host: str, addresses: list[IPAddress]) -> str:
    """
    Say why a host is refused ("" when it may be called): any one of its addresses is refused.

    All, not just the first: a resolver's order changes between lookups, and a client may fall back
    to the next address.
    """
    for address in addresses:
        why = refusal(address)
        if why and address == _literal(host):
            return f"{host} is a private address and is refused" + ("" if why == "a private address" else f" ({why})")
        if why:
            return f"{host} is a private address and is refused ({address} is {why})"
    return ""


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def private_target(url: str) -> str:
    """
    Say why an outgoing call to `url` is refused (SSRF), or "" when it may be made.

    Refused: a malformed URL, one that is not http(s) with a host or carries credentials, a host
    that does not resolve, and one with any address that is not global unicast. The answer holds
    for this lookup only: `apps/actions/outgoing.py` checks again on every connection.
    """
    try:
        target = parse_target(url)
        return refused_addresses(target.host, resolve(target.host, target.port))
    except TargetError as exc:
        return str(exc)
