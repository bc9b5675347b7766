"""Secrets never reach the log, an export or a message: every error text that may quote a
request passes through `redact` before it is stored or shown.

Three nets, widest last: the values providers registered as secrets (the API keys they
read), the values of environment variables whose names say they hold a secret, and
patterns of credentials in text (auth headers, bearer tokens, key query parameters, the
user-info part of URLs such as `http://user:KEY@host`, the shapes of OpenAI and Google API
keys). A masked credential loses its scheme word too
(`Authorization: Bearer …` becomes `Authorization: [REDACTED]`), so not even the kind of
credential is left to grep for.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any

MASK = "[REDACTED]"
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|AUTH|COOKIE|CREDENTIAL)", re.IGNORECASE)
_MIN_SECRET = 8  # shorter values would mask ordinary words

_HEADER = re.compile(
    r"(?i)((?:proxy-)?authorization|x-api-key|x-goog-api-key|api[-_]?key)"
    r"(\"?'?\s*[:=]\s*\"?'?)"
    r"((?:bearer|basic|token)\s+[^\s\"',;}]+|[^\s\"',;}]+)"
)
_COOKIE = re.compile(r"(?i)\b((?:set-)?cookie\"?'?\s*[:=]\s*\"?'?)[^\r\n\"']+")  # every pair, to the line's end
_BEARER = re.compile(r"(?i)\b(?:bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}")
_QUERY = re.compile(r"(?i)([?&](?:key|api_key|apikey|access_token|token)=)([^&\s\"']+)")
# `scheme://user:password@host`: the whole user-info part (a bare `token@host` too).
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/?#\s@\"'<>]+)@")
_KEY_SHAPES = re.compile(r"\b(?:sk-[A-Za-z0-9_-]{16,}|AIza[0-9A-Za-z_-]{30,})")

_registered: set[str] = set()
_lock = threading.Lock()


def register_secret(value: str | None) -> None:
    """Mask `value` in everything redacted from now on (providers register the keys they read,
    whatever the environment variable holding them is called)."""
    if value and len(value) >= _MIN_SECRET:
        with _lock:
            _registered.add(value)


def _secret_values(extra: tuple[str, ...]) -> list[str]:
    from_env = (v for k, v in os.environ.items() if _SECRET_NAME.search(k))
    with _lock:
        values = {*extra, *_registered, *from_env}
    # Longest first, so a secret containing another is masked whole.
    return sorted((v for v in values if v and len(v) >= _MIN_SECRET), key=len, reverse=True)


def redact(text: str, extra_secrets: tuple[str, ...] = ()) -> str:
    if not text:  # every model call's error field, most often empty: no environment scan
        return text
    return _masked(text, _secret_values(tuple(extra_secrets)))


def _masked(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, MASK)
    text = _HEADER.sub(lambda m: m.group(1) + m.group(2) + MASK, text)
    text = _COOKIE.sub(lambda m: m.group(1) + MASK, text)
    text = _BEARER.sub(MASK, text)
    text = _QUERY.sub(lambda m: m.group(1) + MASK, text)
    text = _URL_USERINFO.sub(lambda m: m.group(1) + MASK + "@", text)
    return _KEY_SHAPES.sub(MASK, text)


def redact_data(value: Any, extra_secrets: tuple[str, ...] = ()) -> Any:
    """`redact` applied to every string inside JSON-like data (dict keys included); the
    environment is read once, not once a string (a run's manifest has ~200)."""
    return _masked_data(value, _secret_values(tuple(extra_secrets)))


def _masked_data(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        return _masked(value, secrets) if value else value
    if isinstance(value, dict):
        return {_masked_data(k, secrets): _masked_data(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_masked_data(v, secrets) for v in value]
    return value
