"""Secrets never reach the log, an export or a message: every error text that may quote a
request passes through `redact` before it is stored or shown."""

from __future__ import annotations

import os
import re

_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|AUTH|COOKIE)", re.IGNORECASE)
_PATTERNS = [
    re.compile(r"(?i)(authorization|x-api-key|x-goog-api-key|api-key|cookie)(\"?\s*[:=]\s*\"?)([^\s\"',;]+(?: [^\s\"',;]+)?)"),
    re.compile(r"(?i)(bearer\s+)([A-Za-z0-9._~+/=-]{8,})"),
    re.compile(r"(?i)([?&](?:key|api_key|token)=)([^&\s]+)"),
]
MASK = "[REDACTED]"


def _secret_values() -> list[str]:
    return sorted(
        (v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v) >= 8),
        key=len,
        reverse=True,
    )


def redact(text: str, extra_secrets: tuple[str, ...] = ()) -> str:
    for secret in (*extra_secrets, *_secret_values()):
        if secret:
            text = text.replace(secret, MASK)
    text = _PATTERNS[0].sub(lambda m: m.group(1) + m.group(2) + MASK, text)
    text = _PATTERNS[1].sub(lambda m: m.group(1) + MASK, text)
    return _PATTERNS[2].sub(lambda m: m.group(1) + MASK, text)
