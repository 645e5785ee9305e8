"""Who may talk to the API: plain ASGI middleware in front of every route.

:class:`RequestGuard` answers before the body is read:

- a ``Host`` that is not one of the server's own names → 400
  ``HOST_NOT_ALLOWED`` (a page on ``evil.example`` whose name was rebound
  to 127.0.0.1 cannot read or change chats); so is a malformed one
  (:func:`request_host`: a port that is not 1–65535, anything after the
  name or the port, an IPv6 address without brackets, a trailing dot) and
  a request with more than one ``Host``;
- a request that changes data (POST, PUT, PATCH, DELETE, with or without a
  body) sent by another site's page → 403 ``CROSS_SITE_REQUEST``: its
  ``Sec-Fetch-Site`` is not ``same-origin``/``none``, or its ``Origin`` is
  not this server's own;
- with an API key configured, a request without it → 401 ``UNAUTHORIZED``
  (``Authorization: Bearer KEY`` or ``X-API-Key: KEY``, compared in constant
  time). The documentation pages (``/docs``, ``/redoc``, their static files
  and ``/openapi.json``) hold no data and need no key.

:class:`ContainFailures` turns a failure that is not an ``Exception``
(``pyo3_runtime.PanicException`` from a Rust extension is a
``BaseException``) into one, so the app's 500 handler answers it in the JSON
error shape instead of the server's plain-text page.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import json
import re
from collections.abc import Iterable

from ...errors import ContextfitError, CrossSiteRequest, HostNotAllowed, InternalFailure, Unauthorized

#: The names a loopback server always answers to.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
#: Pages that hold no data: reachable without the API key (never without the host check).
OPEN_PATHS = ("/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json")
OPEN_PREFIXES = ("/static-offline-docs/",)
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_SAME_SITE = frozenset({"same-origin", "none"})


def host_name(host: str) -> str:
    """The name part of a ``Host`` header or ``--host`` value, lower-cased, without port or brackets.

    >>> host_name("LocalHost:8000"), host_name("[::1]:8000"), host_name("::1"), host_name("127.0.0.1")
    ('localhost', '::1', '::1', '127.0.0.1')
    """
    host = host.strip().lower()
    if host.startswith("["):
        host = host[1 : host.find("]")] if "]" in host else host
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    try:
        return ipaddress.IPv6Address(host).compressed  # one spelling per address, as request_host gives it
    except ValueError:
        return host


_HOST = re.compile(
    r"(?:\[(?P<ip6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?))(?::(?P<port>[0-9]{1,5}))?"
)


def request_host(value: str) -> str | None:
    """The name a request's ``Host`` header gives (lower-cased; an IPv6 address in its short form,
    without brackets), or ``None`` when the header is malformed: only ``name``, ``name:port``,
    ``[ipv6]`` and ``[ipv6]:port`` with a port of 1–65535 are read (RFC 9110 §7.2).

    >>> request_host("LocalHost:8000"), request_host("[0:0::1]:80"), request_host("127.0.0.1")
    ('localhost', '::1', '127.0.0.1')
    >>> [request_host(bad) for bad in ("localhost:80@evil.example", "localhost:abc", "[::1]junk", "::1", "localhost.")]
    [None, None, None, None, None]
    """
    found = _HOST.fullmatch(value)
    if found is None or (found["port"] is not None and not 0 < int(found["port"]) < 65536):
        return None
    if found["ip6"] is not None:
        try:
            return ipaddress.IPv6Address(found["ip6"]).compressed
        except ValueError:
            return None
    name = found["name"].lower()
    return None if ".." in name else name


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a ``--host`` value) listens on this machine only.

    >>> is_loopback("127.0.0.1"), is_loopback("localhost"), is_loopback("[::1]"), is_loopback("0.0.0.0")
    (True, True, True, False)
    """
    name = host_name(host)
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def allowed_hosts(host: str | None = None, extra: Iterable[str] = ()) -> frozenset[str]:
    """The loopback names, the ``--host`` the server listens on, and each ``--allowed-host``.

    >>> sorted(allowed_hosts("0.0.0.0", ["chat.example.org"]))
    ['0.0.0.0', '127.0.0.1', '::1', 'chat.example.org', 'localhost']
    """
    names = [*LOOPBACK_HOSTS, *([host] if host else []), *extra]
    return frozenset(host_name(name) for name in names if name.strip())


class RequestGuard:
    """Checks the host, the origin of state-changing requests, and the API key (see the module docstring)."""

    def __init__(self, app, *, hosts: Iterable[str], api_key: str | None = None) -> None:
        self.app = app
        self.hosts = frozenset(host_name(name) for name in hosts)
        self._key_digest = _digest(api_key) if api_key else None

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        host = headers.get("host", "")
        refusal: tuple[int, ContextfitError] | None = None
        hosts = [value for name, value in scope.get("headers") or () if name.lower() == b"host"]
        if len(hosts) > 1 or request_host(host) not in self.hosts:
            refusal = (400, HostNotAllowed(host))
        elif scope.get("method", "GET") not in _SAFE_METHODS and _from_another_site(headers, host):
            refusal = (403, CrossSiteRequest())
        elif self._key_digest is not None and not _is_open(scope.get("path", "")) and not self._has_key(headers):
            refusal = (401, Unauthorized())
        if refusal is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        else:
            status, error = refusal
            extra = [(b"www-authenticate", b"Bearer")] if status == 401 else []
            await send_error(send, status, error, extra)

    def _has_key(self, headers: dict[str, str]) -> bool:
        scheme, _, token = headers.get("authorization", "").partition(" ")
        presented = token.strip() if scheme.lower() == "bearer" else headers.get("x-api-key", "")
        # Digests of equal length, compared in constant time: neither the key nor its length leaks.
        return hmac.compare_digest(_digest(presented), self._key_digest or b"")


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()


def _headers(scope) -> dict[str, str]:
    """The request's headers by lower-case name (the first of repeated ones)."""
    found: dict[str, str] = {}
    for name, value in scope.get("headers") or ():
        found.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
    return found


def _from_another_site(headers: dict[str, str], host: str) -> bool:
    site = headers.get("sec-fetch-site")
    if site is not None and site.strip().lower() not in _SAME_SITE:
        return True
    origin = headers.get("origin")
    if origin is None:
        return False  # not sent by a browser page (curl, scripts), or an old browser's same-origin GET form
    return origin.strip().lower() not in (f"http://{host}".lower(), f"https://{host}".lower())


def _is_open(path: str) -> bool:
    return path in OPEN_PATHS or path.startswith(OPEN_PREFIXES)


async def send_error(send, status: int, error: ContextfitError, headers: list[tuple[bytes, bytes]] = ()) -> None:
    """Answer with ``{"error": {...}}`` from plain ASGI middleware (before the app has seen the request)."""
    body = json.dumps({"error": error.to_dict()}).encode()
    start = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": start})
    await send({"type": "http.response.body", "body": body})



_LEAVE_ALONE = (KeyboardInterrupt, SystemExit, GeneratorExit, asyncio.CancelledError)


class ContainFailures:
    """Re-raises a ``BaseException`` that is not a cancellation or an exit as :class:`InternalFailure`."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        try:
            await self.app(scope, receive, send)
        except Exception:
            raise
        except BaseException as exc:
            if _must_propagate(exc):
                raise
            raise InternalFailure(f"{type(exc).__module__}.{type(exc).__name__}: {exc}"[:500]) from exc


def _must_propagate(exc: BaseException) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return any(_must_propagate(inner) for inner in exc.exceptions)
    return isinstance(exc, _LEAVE_ALONE)
