"""JSON over HTTP for the wire providers: timeouts, an in-flight limit, retries with
exponential backoff and jitter on 429, 5xx, timeouts, dropped connections and truncated
bodies, honouring `Retry-After`, and a circuit breaker for an endpoint that stops answering.

Every failed try becomes a retry record `{status, error, waited_seconds}` (status is the HTTP
status, or null when no response came) that the provider hands back with its answer, so it
lands on the `model.called` event. After the last try the call raises `ProviderError` whose
reason names the endpoint, the tries and the last failure. A deterministic rejection (400,
404, 422, or a 500 whose body names an invalid request field) is `RequestRejected` at once,
never retried; a refused key (401, 403) is `CredentialsRefused`, which stops the run. Every text that leaves this module has been through `redact`, with the
client's own key masked first.

Connection failures (nothing listening, no connection within the connect timeout) spend no
retries: they feed the endpoint's `CircuitBreaker`. So do 502, 503 and 504 (a gateway with
nothing behind it, llama.cpp's server still loading its model), which spend the call's retries
while other calls get answers; when nothing else answers (and, for a gateway's 502 or 504, which
may be one request's own, another call failed too), they are an outage like a refused
connection. After `outage_after_failures` failures in a row the
endpoint counts as down, every call waits and probes again at growing intervals (the
breaker's listener, e.g. the progress bar, is told), and once the outage has lasted
`outage_timeout_seconds` the calls raise `ProviderOutage`: the run stops, nothing is failed.
"""

from __future__ import annotations

import json
import os
import random
import re
import ssl
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

import aiohttp
import anyio
import certifi
import orjson

from eviscene.agent.provider import ContextLengthExceeded, CredentialsRefused, ProviderError, ProviderOutage, RequestRejected
from eviscene.redaction import redact, register_proxy_secrets, register_secret, register_url_secrets
from eviscene.rules.circuit_breaker import CircuitBreaker
from eviscene.rules.jsonl import replace_lone_surrogates

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
UNAVAILABLE_STATUS = frozenset({502, 503, 504})  # the endpoint not serving at all, perhaps (503), or its gateway's
_BODY_QUOTE = 300  # characters of an error body quoted in a reason
MAX_ANSWER_BYTES = 32 * 1024**2
"""A model server's answer is read up to this size: a whole turn with its reasoning is
rarely over a megabyte, and a 60 MB body, read whole and stored, cost a run ~860 MB."""
# What a 500 says when the server refused the request itself (llama.cpp's server answers a
# request-validation failure with 500): a field name and a validation phrase.
_INVALID_REQUEST = re.compile(
    r"response_format|json_schema|validation error|input should be|extra inputs are not permitted|field required|"
    r"unrecognized request argument|invalid_request_error|maximum context length|context window",
    re.IGNORECASE,
)
_CONTEXT_LENGTH = re.compile(
    r"maximum context length is (\d+)|context window of (\d+)|context length of (\d+)|context_length_exceeded|"
    r"exceeds? (?:the )?(?:model'?s? )?context",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 4
    backoff_seconds: float = 1.0
    max_backoff_seconds: float = 60.0
    max_retry_after_seconds: float = 300.0  # a server asking for a longer pause fails the call instead

    def backoff(self, failures: int) -> float:
        """Exponential backoff with equal jitter: half fixed, half random."""
        ceiling = min(self.max_backoff_seconds, self.backoff_seconds * 2 ** (failures - 1))
        return ceiling / 2 + random.uniform(0, ceiling / 2)


@dataclass(frozen=True)
class Endpoint:
    """Where and how a provider talks: the API key is held here, read from the environment
    variable a profile names, and never shown (`repr` leaves it out)."""

    base_url: str
    api_key: str | None = field(default=None, repr=False)
    auth_header: str = "authorization"  # or "x-goog-api-key"
    timeout_seconds: float = 600.0
    connect_timeout_seconds: float = 10.0
    max_inflight: int = 4
    retry: RetryPolicy = RetryPolicy()
    outage_after_failures: int = 3  # connection failures in a row that open the circuit breaker
    outage_timeout_seconds: float = 600.0  # how long calls wait for a down endpoint before the run stops

    def headers(self) -> dict[str, str]:
        if not self.api_key:
            return {}
        if self.auth_header == "authorization":
            return {"Authorization": f"Bearer {self.api_key}"}
        return {self.auth_header: self.api_key}


class _Retryable(Exception):
    def __init__(self, status: int | None, reason: str, retry_after: float | None = None):
        super().__init__(reason)
        self.status, self.reason, self.retry_after = status, reason, retry_after


class _Unreachable(_Retryable):
    """No connection at all: the breaker's business, not the call's retry budget."""


class JsonClient:
    """POSTs JSON bodies to one endpoint; one per provider, shared by all its episodes.

    The transport is aiohttp: its HTTP parser is C, a fifth to an eighth of httpx's CPU a
    call on the event loop (bench/providers.py). The session is made on first use, in the
    event loop it belongs to, and closed by `aclose`; a call after that makes a new one."""

    def __init__(self, endpoint: Endpoint, *, label: str):
        self.endpoint, self.label = endpoint, label
        register_secret(endpoint.api_key)
        register_url_secrets(endpoint.base_url)
        register_proxy_secrets()  # before a provider takes its snapshot of the secrets (KnownSecrets)
        self._secrets = (endpoint.api_key,) if endpoint.api_key else ()
        self._limiter = anyio.CapacityLimiter(max(1, endpoint.max_inflight))
        self._session: aiohttp.ClientSession | None = None
        self._proxy: str | None = None
        self.breaker = CircuitBreaker(
            redact(endpoint.base_url), threshold=endpoint.outage_after_failures, outage_timeout=endpoint.outage_timeout_seconds
        )

    def _open_session(self) -> aiohttp.ClientSession:
        e = self.endpoint
        if self._session is None or self._session.closed:
            self._proxy = _environment_proxy(e.base_url)
            # Loading the CA bundle costs ~35 ms of CPU a session: only TLS to the endpoint or
            # its proxy reads the context, so a plain-HTTP server (vLLM, llama.cpp) skips it.
            speaks_tls = any(urllib.parse.urlsplit(url).scheme == "https" for url in (e.base_url, self._proxy) if url)
            connector = aiohttp.TCPConnector(
                limit=max(1, e.max_inflight),  # the limiter's calls never wait for a connection
                ssl=_tls_context() if speaks_tls else True,
                keepalive_timeout=5.0,  # as httpx: a server's idle keep-alive may be as short
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                headers={"content-type": "application/json", **e.headers()},
                # Each read (and the send) within the timeout, and the whole answer within both:
                # a slowly trickling answer ends too. (anyio.fail_after around each call would
                # cost a fifth of the call's CPU.)
                timeout=aiohttp.ClientTimeout(
                    total=e.connect_timeout_seconds + e.timeout_seconds,
                    connect=None,
                    sock_connect=e.connect_timeout_seconds,
                    sock_read=e.timeout_seconds,
                ),
            )
        return self._session

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    def redact(self, text: str) -> str:
        return redact(text, self._secrets)

    async def post(self, path: str, body: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The decoded JSON answer and the retry records of the tries that failed before it."""
        policy = self.endpoint.retry
        retries: list[dict[str, Any]] = []
        # orjson: a tenth of json.dumps's time on the event loop for a body of tens of kB.
        content = orjson.dumps(body)
        url = endpoint_url(self.endpoint.base_url, path)
        spent = 0  # retries used; waiting for an unreachable endpoint uses none
        unavailable_in_a_row = 0  # this call's 502/503/504 answers since its last other failure
        while True:
            try:
                async with self._limiter:
                    answer = await self._try(url, content)
                self.breaker.answered()
                return answer, retries
            except _Unreachable as failure:
                await self._wait_for_endpoint(url, failure, retries)
            except _Retryable as failure:
                if failure.status in UNAVAILABLE_STATUS:
                    # Nothing else answered since this call's first of them in a row: the endpoint is
                    # down for every call, not refusing this one; waited for once the retries (or the
                    # breaker's threshold) are spent, as a refused connection is. A 503 says so of the
                    # service itself; a gateway's 502 or 504 may be this request's alone (one that
                    # crashes the server, or outlasts the gateway), so another call must have failed too.
                    others_failed = self.breaker.failures - unavailable_in_a_row
                    down_for_all = others_failed >= (0 if failure.status == 503 else 1)
                    unavailable_in_a_row += 1
                    if down_for_all and (spent >= policy.max_retries or self.breaker.failures + 1 >= self.breaker.threshold):
                        await self._wait_for_endpoint(url, failure, retries)
                        continue
                    self.breaker.failed()
                else:
                    unavailable_in_a_row = 0
                    self.breaker.answered()  # something answered: the endpoint is up
                reason = self.redact(failure.reason)
                too_long = failure.retry_after is not None and failure.retry_after > policy.max_retry_after_seconds
                if too_long or spent >= policy.max_retries:
                    retries.append({"status": failure.status, "error": reason, "waited_seconds": 0.0})
                    why = (
                        f"the server asked to wait {failure.retry_after:g} s, more than the {policy.max_retry_after_seconds:g} s limit"
                        if too_long
                        else None
                    )
                    raise self._gave_up(url, retries, why) from None
                spent += 1
                wait = failure.retry_after if failure.retry_after is not None else policy.backoff(spent)
                retries.append({"status": failure.status, "error": reason, "waited_seconds": round(wait, 3)})
                await anyio.sleep(wait)

    async def _wait_for_endpoint(self, url: str, failure: _Retryable, retries: list[dict[str, Any]]) -> None:
        """A connection failure (or an unavailable endpoint's answer): back off as for any failure until the breaker opens, then
        wait for the endpoint (probing) until the outage timeout stops the run."""
        reason = self.redact(failure.reason)
        down = "unreachable" if failure.status is None else "unavailable"
        outage = ProviderOutage(self.redact(
            f"{self.label}: {self.endpoint.base_url} {down} for {self.breaker.outage_timeout:g} s ({reason}), "
            "the provider outage timeout"
        ))
        asked = min(failure.retry_after or 0.0, self.endpoint.retry.max_retry_after_seconds)
        waited = await self.breaker.after_failure(reason, self.endpoint.retry.backoff, lambda: outage, at_least=asked)
        retries.append({"status": failure.status, "error": reason, "waited_seconds": round(waited, 3)})

    async def _try(self, url: str, content: bytes) -> dict[str, Any]:
        e = self.endpoint
        session = self._open_session()
        try:
            async with session.post(url, data=content, allow_redirects=False, proxy=self._proxy) as answer:
                read = bytearray()
                async for chunk in answer.content.iter_chunked(1024**2):
                    read += chunk
                    if len(read) > MAX_ANSWER_BYTES:
                        raise ProviderError(self.redact(f"{self.label}: HTTP {answer.status}: the answer is over "
                                                        f"{MAX_ANSWER_BYTES // 1024**2} MiB; not read"))
                response = _Response(answer.status, answer.reason or "", answer.headers.get("retry-after"), answer.charset,
                                     answer.headers.get("location"), bytes(read))
        except aiohttp.ConnectionTimeoutError:
            raise _Unreachable(None, f"connect timeout: no connection within {e.connect_timeout_seconds:g} s") from None
        except TimeoutError:  # a read, or the whole answer, past its timeout
            raise _Retryable(None, f"read timeout: no complete response within {e.timeout_seconds:g} s") from None
        except aiohttp.ClientConnectorError as exc:
            raise _Unreachable(None, "connection refused" if _refused(exc) else f"connection failed: {type(exc).__name__}: {self._quote(str(exc))}") from None
        except aiohttp.ClientError as exc:  # dropped connection, truncated body, garbled HTTP
            raise _Retryable(None, f"connection failed: {type(exc).__name__}: {self._quote(str(exc))}") from None
        status = response.status
        if 300 <= status < 400:  # not followed: the request and its key go to the endpoint named, nowhere else
            self.breaker.answered()
            where = f"set the base URL to where it points: {self._quote(response.location)}" if response.location else "(it names no Location)"
            raise ProviderError(self.redact(
                f"{self.label}: HTTP {status}: a redirect, not followed, so a request and its key reach the base URL only; {where}"
            ))
        if status in (401, 403):  # the key refused: so would every call of the run be
            self.breaker.answered()
            raise CredentialsRefused(self.redact(
                f"{self.label}: {self._status_reason(response)} (check the API key in the environment variable "
                "the profile or --api-key-env names)"
            ))
        if status >= 400:  # every retryable status is an error status
            message = _error_message(response)
            deterministic = status in (400, 404, 422) or (status == 500 and bool(_INVALID_REQUEST.search(message)))
            if not deterministic and (status in RETRYABLE_STATUS or status >= 500):
                raise _Retryable(status, self._status_reason(response), retry_after(response.retry_after))
            self.breaker.answered()
            reason = self.redact(f"{self.label}: {self._status_reason(response)}")
            context = _CONTEXT_LENGTH.search(message)
            if context:
                window = next((int(g) for g in context.groups() if g and g.isdigit()), None)
                raise ContextLengthExceeded(reason, status=status, message=self.redact(message), window=window)
            raise RequestRejected(reason, status=status, message=self.redact(message))
        try:
            decoded = orjson.loads(response.body)
        except orjson.JSONDecodeError as exc:  # a cut-off or garbled body: the next try may arrive whole
            raise _Retryable(status, f"HTTP {status}: body is not valid JSON ({exc}): {self._quote(response.text)}") from None
        if not isinstance(decoded, dict):
            raise ProviderError(self.redact(f"{self.label}: HTTP {status}: body is JSON but not an object: {self._quote(response.text)}"))
        return decoded

    def _quote(self, text: str) -> str:
        """A server's text for a reason: redacted whole, then cut (a key cut first would no
        longer be the key redaction looks for)."""
        text = " ".join(self.redact(text).split())
        return text if len(text) <= _BODY_QUOTE else text[: _BODY_QUOTE - 1] + "…"

    def _status_reason(self, response: _Response) -> str:
        message = _error_message(response)
        return f"HTTP {response.status} {response.reason_phrase}".rstrip() + (f": {self._quote(message)}" if message else "")

    def _gave_up(self, url: str, retries: list[dict[str, Any]], why: str | None = None) -> ProviderError:
        tries = f"{len(retries)} {'try' if len(retries) == 1 else 'tries'}"
        error = ProviderError(self.redact(f"{self.label}: POST {url} failed after {tries}; {why or 'last: ' + retries[-1]['error']}"))
        error.retries = retries
        return error


def retry_after(value: str | None) -> float | None:
    """Seconds to wait from a `Retry-After` header: delta-seconds or an HTTP date."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - time.time())


@dataclass(frozen=True)
class _Response:
    """What `_try` reads of an answer before the connection goes back to the pool."""

    status: int
    reason_phrase: str
    retry_after: str | None
    charset: str | None
    location: str | None
    body: bytes

    @property
    def text(self) -> str:
        """The body as text: its declared charset if Python reads text in it, else UTF-8; bad
        bytes replaced. (A server names the charset: Python's codecs include ones that are no
        text encoding, `rot13`, `base64`, which refuse to decode.)"""
        try:
            return self.body.decode(self.charset or "utf-8", errors="replace")
        except (LookupError, ValueError):
            return self.body.decode("utf-8", errors="replace")


def _tls_context() -> ssl.SSLContext:
    """Verification as httpx did it: the CA file or folder SSL_CERT_FILE / SSL_CERT_DIR names,
    else certifi's bundle."""
    if os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    if os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=os.environ["SSL_CERT_DIR"])
    return ssl.create_default_context(cafile=certifi.where())


def endpoint_url(base_url: str, path: str) -> str:
    """`path` under the base URL's path, before its query (Azure's `…/deployments/NAME?api-version=…`)."""
    parts = urllib.parse.urlsplit(base_url)
    return urllib.parse.urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/" + path.lstrip("/"), fragment=""))


def _environment_proxy(base_url: str) -> str | None:
    """The proxy the environment names for the endpoint (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY,
    NO_PROXY), read once per session as httpx did; aiohttp's own `trust_env` would read it,
    and ~/.netrc, on a thread for every request."""
    parts = urllib.parse.urlsplit(base_url)
    if parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get(parts.scheme) or proxies.get("all")


def _error_message(response: _Response) -> str:
    """The server's message: `error.message` or `error` of a JSON body, else the JSON body
    decoded (`{"detail": …}`: its escapes, `\\u002d` or PHP's `\\/`, would hide an echoed key
    from redaction), else the body."""
    text = response.text.strip()
    try:
        decoded = json.loads(text)
    except (ValueError, RecursionError):
        return text
    error = decoded.get("error") if isinstance(decoded, dict) else None
    if isinstance(error, dict) and error.get("message"):
        message = str(error["message"])
    elif isinstance(error, str) or isinstance(decoded, str):
        message = error if isinstance(error, str) else decoded
    else:
        try:
            message = json.dumps(decoded, ensure_ascii=False)
        except RecursionError:
            return text
    return replace_lone_surrogates(message)  # `"\\ud800"` decoded: half a character, which the log cannot hold


def _refused(exc: BaseException | None, depth: int = 0) -> bool:
    """Whether a connect error comes from a refused connection (nothing listening), in the
    cause chain or a group (one error for each address of the host)."""
    if exc is None or depth > 8:
        return False
    if isinstance(exc, ConnectionRefusedError) or "refused" in str(exc).lower():
        return True
    inner = list(getattr(exc, "exceptions", ()))
    return any(_refused(e, depth + 1) for e in [exc.__cause__, exc.__context__, *inner])
