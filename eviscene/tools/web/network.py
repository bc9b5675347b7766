"""The web backend cannot be turned on its own host: a URL whose host is, or resolves to,
a loopback, private, link-local, shared, multicast or reserved address (127.0.0.1, 10.x,
192.168.x, 169.254.169.254, ::1, fc00::/7 …) is refused before any connection, unless the
run allows it (`--allow-private-network`, e.g. for a test server or an intranet mirror).
Every address a name resolves to must be public; a refusal is a `gate.decided` event of
the `network_guard` gate.

The check is made again on the address connected to: the page fetcher's connections go
through `GuardedBackend`, which resolves the name with the guard's resolver, refuses unless
every answer is public, and connects to one of those very addresses. The HTTP client's own
lookup would be a second DNS answer, which a rebinding server can point at 127.0.0.1 or
169.254.169.254 after the first one passed.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable
from typing import Optional
from urllib.parse import urlsplit

import anyio
import httpcore
import httpx

from eviscene.events import GateDecided

NETWORK_GATE = "network_guard"
PRIVATE_NETWORK = "private_network"

Resolver = Callable[[str, int], Awaitable[list[str]]]
"""(host, port) -> the IP addresses a connection would try."""


async def system_resolver(host: str, port: int) -> list[str]:
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


# An IPv6 address that carries an IPv4 one is judged by where its packets go, the same on
# every Python (whose verdicts on these prefixes differ by version): NAT64's well-known prefix
# (`64:ff9b::a9fe:a9fe` is 169.254.169.254 behind a NAT64 gateway, as IPv6-only cloud subnets
# have) and 6to4 by their IPv4 address; IPv4-compatible addresses (deprecated) and NAT64's
# local-use prefix (where the IPv4 address sits is the operator's choice) are never public.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NEVER_PUBLIC = (ipaddress.ip_network("::/96"), ipaddress.ip_network("64:ff9b:1::/48"))


def is_public(address: str) -> bool:
    """Whether `address` is a global unicast address, an IPv6 one carrying an IPv4 address
    (mapped, NAT64, 6to4) judged by that IPv4 address."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone id
    if isinstance(ip, ipaddress.IPv6Address):
        if any(ip in prefix for prefix in _NEVER_PUBLIC):
            return False
        if ip in _NAT64:
            ip = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        else:
            ip = ip.ipv4_mapped or ip.sixtofour or ip
    return ip.is_global and not ip.is_multicast


class NonPublicAddress(Exception):
    """A name resolves to an address that is not public (and the run does not allow it)."""


def refusal_block(url: str) -> GateDecided:
    return GateDecided(gate=NETWORK_GATE, subject=url, passed=False, reasons=[PRIVATE_NETWORK])


class NetworkGuard:
    """`await guard.refusal(url)`: the `gate.decided` block when `url` may not be fetched,
    else None. Verdicts are kept per host and port for the guard's life (one run)."""

    def __init__(self, *, allow_private_network: bool = False, resolver: Optional[Resolver] = None) -> None:
        self.allow_private_network = allow_private_network
        self.resolve = resolver or system_resolver
        self._verdicts: dict[tuple[str, int], bool] = {}

    async def refusal(self, url: str, *, refuse_unresolved: bool = True) -> Optional[GateDecided]:
        """`refuse_unresolved=False` lets a name that does not resolve now pass (a search hit
        is only listed; visiting it checks again)."""
        if self.allow_private_network:
            return None
        try:
            parts = urlsplit(url)
            host = (parts.hostname or "").rstrip(".")
            port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
        except ValueError:
            return None  # an unclosed `[` or a bad port: the fetch fails without connecting
        if not host:
            return None  # not a fetchable URL; the caller reports that
        key = (host.lower(), port)
        public = self._verdicts.get(key)
        if public is None:
            public = await self._public(host, port)
            if public is not None:
                self._verdicts[key] = public
        if public or (public is None and not refuse_unresolved):
            return None
        return refusal_block(url)

    async def _public(self, host: str, port: int) -> Optional[bool]:
        """True or False; None (refused, not remembered) when the name does not resolve now."""
        try:
            await self.addresses(host, port)
        except NonPublicAddress:
            return False
        except OSError:
            return None
        return True

    async def addresses(self, host: str, port: int) -> list[str]:
        """The addresses `host` resolves to now (an address literal is its own), all public
        unless the run allows private ones, else NonPublicAddress; OSError when it does not
        resolve."""
        try:
            ipaddress.ip_address(host.split("%", 1)[0])
            found = [host]
        except ValueError:
            found = list(dict.fromkeys(await self.resolve(host, port)))
        if not self.allow_private_network and not (found and all(is_public(address) for address in found)):
            raise NonPublicAddress(f"{host} resolves to a non-public address")
        return found


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """An httpcore network backend that connects only to addresses `guard` has just vetted
    (see the module docstring); TLS still verifies the certificate against the URL's host
    name, which httpcore passes to `start_tls` on its own."""

    def __init__(self, guard: NetworkGuard) -> None:
        self.guard = guard
        self.inner = httpcore.AnyIOBackend()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None) -> httpcore.AsyncNetworkStream:
        try:
            addresses = await self.guard.addresses(host, port)
        except OSError as exc:
            raise httpcore.ConnectError(f"{host}: {exc}") from exc
        error: Exception = httpcore.ConnectError(f"{host} resolves to no address")
        for address in addresses:  # in the resolver's order, as a client tries them
            try:
                return await self.inner.connect_tcp(address, port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:
                error = exc
        raise error

    async def sleep(self, seconds: float) -> None:  # between a pool's connection retries
        await self.inner.sleep(seconds)


class GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport on a connection pool that connects through `GuardedBackend`. httpx
    takes no network backend (encode/httpx#3749), so the pool it would build is set here."""

    def __init__(self, guard: NetworkGuard) -> None:  # not the parent's, which builds its own pool; should
        # httpx rename `_pool`, requests fail rather than go round the guard
        self._pool = httpcore.AsyncConnectionPool(ssl_context=httpx.create_ssl_context(),
                                                  network_backend=GuardedBackend(guard))
