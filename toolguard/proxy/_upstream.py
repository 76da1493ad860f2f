"""The upstream side: one pooled httpx transport, bounded retries with backoff, one error boundary.

Theory of operation. ``Upstream.open`` sends one request and returns the response with its body *unread*
(streaming), after retrying what is safe to retry: a connection that could not be made (the request never
left), ``429`` and ``503`` (the upstream refused before working), and, for requests the caller marks
``idempotent`` (chat completions have no side effect but cost), ``408``/``500``/``502``/``504``, read timeouts
and broken responses. Delays double from ``backoff_initial`` up to ``backoff_max``, scaled by a random factor
in [0.5, 1] (``toolguard._retry.exponential_backoff``, the formula the re-ask flow uses too); a
``retry-after`` (or ``retry-after-ms``) header sets the delay instead, and when it is longer than
``max_retry_after`` or than what the deadline leaves, the proxy gives up and hands the upstream's answer (with
its ``retry-after``) to the client. Every wait and every attempt is bounded by the request's ``Deadline``. At
most ``retries + 1`` attempts: O(1) per request beyond the bytes moved.

httpx's exceptions are translated here and nowhere else (``translate``): timeouts become ``UpstreamTimeout``,
broken framing or an early close ``UpstreamProtocolError``, anything else ``UpstreamError``. Messages never
include request headers, so the upstream key cannot leak into logs or error bodies.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
import httpx

from .._exceptions import UpstreamError, UpstreamProtocolError, UpstreamTimeout
from .._openai import parse_retry_after
from .._retry import exponential_backoff

if TYPE_CHECKING:
    from ._config import ProxyConfig
    from ._metrics import Metrics

__all__ = [
    "HOP_BY_HOP",
    "Deadline",
    "Upstream",
    "filter_request_headers",
    "filter_response_headers",
    "translate",
]

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
    }
)
# Never copied from the client: recomputed by httpx or decided by the auth policy.
_REQUEST_DROP = HOP_BY_HOP | {"host", "content-length", "accept-encoding", "authorization", "cookie"}
# Never copied from the upstream: the body is re-framed (and decoded) by the proxy, and uvicorn adds its own.
_RESPONSE_DROP = HOP_BY_HOP | {"content-length", "content-encoding", "server", "date", "set-cookie"}

_SAFE_STATUSES = frozenset({429, 503})
_IDEMPOTENT_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class Deadline:
    """The time left for one client request, on the monotonic clock."""

    __slots__ = ("expires",)

    def __init__(self, seconds: float) -> None:
        self.expires = time.monotonic() + seconds

    def remaining(self) -> float:
        return max(0.0, self.expires - time.monotonic())


def _connection_tokens(headers: Iterable[tuple[str, str]]) -> set[str]:
    out: set[str] = set()
    for k, v in headers:
        if k.lower() == "connection":
            out.update(t.strip().lower() for t in v.split(",") if t.strip())
    return out


def filter_request_headers(
    headers: Iterable[tuple[str, str]], *, authorization: str | None
) -> list[tuple[str, str]]:
    """Client headers to send upstream: hop-by-hop and ``Connection``-listed ones dropped, auth replaced."""
    pairs = list(headers)
    drop = _REQUEST_DROP | _connection_tokens(pairs)
    out = [(k, v) for k, v in pairs if k.lower() not in drop]
    out.append(("accept-encoding", "identity"))
    if authorization:
        out.append(("authorization", authorization))
    return out


def filter_response_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    """Upstream headers to give the client, as ASGI byte pairs."""
    pairs = list(headers)
    drop = _RESPONSE_DROP | _connection_tokens(pairs)
    return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in pairs if k.lower() not in drop]


def translate(exc: Exception) -> UpstreamError:
    """The one boundary where httpx errors become toolguard's (chain with ``from exc``)."""
    if isinstance(exc, UpstreamError):
        return exc
    if isinstance(exc, (httpx.TimeoutException, TimeoutError)):
        return UpstreamTimeout(f"the upstream did not answer in time ({type(exc).__name__})")
    if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError, httpx.DecodingError)):
        return UpstreamProtocolError(
            f"the upstream broke the connection or the protocol ({type(exc).__name__})"
        )
    if isinstance(exc, httpx.ConnectError):
        return UpstreamError("cannot connect to the upstream (is it running? check --upstream)")
    return UpstreamError(f"upstream request failed ({type(exc).__name__})")


def _env_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTP(S)_PROXY``, honouring ``NO_PROXY``)."""
    import urllib.parse
    import urllib.request

    parts = urllib.parse.urlsplit(url)
    if parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies().get(parts.scheme)


@dataclass(frozen=True, slots=True)
class _Attempt:
    """Why an attempt is retried, for metrics: a status code or an exception kind."""

    reason: str
    delay: float | None


class Upstream:
    """A pooled client for one upstream base URL, with the retry rules above."""

    def __init__(
        self,
        config: ProxyConfig,
        *,
        metrics: Metrics,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = config.upstream
        self._config = config
        self._metrics = metrics
        if transport is None:
            transport = httpx.AsyncHTTPTransport(
                limits=httpx.Limits(
                    max_connections=config.max_connections, max_keepalive_connections=config.max_connections
                ),
                proxy=_env_proxy(config.upstream) if config.trust_env else None,
                trust_env=config.trust_env,
            )
        # The transport, not an AsyncClient: no cookie jar shared between users, no redirects, no auth flow,
        # and a third less CPU per request.
        self._transport = transport
        self._chat_url: httpx.URL | None = None

    async def aclose(self) -> None:
        await self._transport.aclose()

    @property
    def chat_url(self) -> httpx.URL:
        """The upstream's chat-completions URL, parsed once."""
        if self._chat_url is None:
            self._chat_url = httpx.URL(self.url("/v1/chat/completions"))
        return self._chat_url

    def url(self, path: str, query: bytes = b"") -> str:
        """Upstream URL for a client path under ``/v1`` (``/v1/models`` -> ``<base>/models``)."""
        sub = path[3:] if path.startswith("/v1/") else path
        url = self.base_url + (sub if sub.startswith("/") else "/" + sub)
        return url + ("?" + query.decode("latin-1") if query else "")

    def _delay(self, attempt: int) -> float:
        c = self._config
        return exponential_backoff(attempt + 1, initial=c.backoff_initial, cap=c.backoff_max, jitter=0.5)

    async def open(
        self,
        method: str,
        url: str | httpx.URL,
        *,
        headers: list[tuple[str, str]],
        content: bytes,
        deadline: Deadline,
        idempotent: bool,
        retries: int | None = None,
    ) -> httpx.Response:
        """Send with up to ``retries`` retries (default: the config's ``upstream_retries``); return the last
        response, body unread. The caller must ``aclose()`` it.

        Raises ``UpstreamError`` (``UpstreamTimeout``, ``UpstreamProtocolError``) when no response came back.
        """
        limit = self._config.upstream_retries if retries is None else retries
        safe = idempotent or method.upper() in _SAFE_METHODS
        statuses = _IDEMPOTENT_STATUSES if safe else _SAFE_STATUSES
        attempt = 0
        while True:
            remaining = deadline.remaining()
            if remaining <= 0:
                raise UpstreamTimeout("the request deadline passed before the upstream answered")
            timeout = httpx.Timeout(
                connect=min(self._config.connect_timeout, remaining),
                read=min(self._config.read_timeout, remaining),
                write=min(self._config.read_timeout, remaining),
                pool=remaining,
            )
            request = httpx.Request(
                method, url, headers=headers, content=content, extensions={"timeout": timeout.as_dict()}
            )
            started = time.monotonic()
            retry: _Attempt | None = None
            try:
                response = await self._transport.handle_async_request(request)
                response.request = request
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
                self._metrics.upstream_error("connect")
                if attempt >= limit:
                    raise translate(exc) from exc
                retry = _Attempt("connect", None)
            except httpx.HTTPError as exc:
                err = translate(exc)
                self._metrics.upstream_error("timeout" if isinstance(err, UpstreamTimeout) else "protocol")
                if not safe or attempt >= limit:
                    raise err from exc
                retry = _Attempt("timeout" if isinstance(err, UpstreamTimeout) else "protocol", None)
            else:
                self._metrics.upstream_latency.observe(time.monotonic() - started)
                if response.status_code < 400 or response.status_code not in statuses:
                    return response
                self._metrics.upstream_error(str(response.status_code))
                if attempt >= limit:
                    return response
                after = parse_retry_after(response.headers)
                delay = after if after is not None else self._delay(attempt)
                if delay > self._config.max_retry_after or delay >= deadline.remaining():
                    return (
                        response  # no time to wait that long: the client decides, with the upstream's headers
                    )
                await response.aclose()
                retry = _Attempt(str(response.status_code), delay)
            delay = retry.delay if retry.delay is not None else self._delay(attempt)
            if delay >= deadline.remaining():
                raise UpstreamTimeout("the request deadline leaves no time to retry the upstream")
            self._metrics.retry(f"upstream_{retry.reason}")
            attempt += 1
            await anyio.sleep(delay)

    async def read_body(self, response: httpx.Response, *, limit: int) -> bytes:
        """The whole (decoded) body, at most ``limit`` bytes; ``UpstreamError`` beyond it or on failure."""
        parts: list[bytes] = []
        size = 0
        try:
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > limit:
                    raise UpstreamProtocolError(
                        f"the upstream answer exceeds {limit} bytes (max_upstream_body_bytes)"
                    )
                parts.append(chunk)
        except httpx.HTTPError as exc:
            raise translate(exc) from exc
        return b"".join(parts)
