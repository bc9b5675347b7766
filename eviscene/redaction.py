"""Secrets never reach the log, an export or a message:
- every error text that may quote a request passes through `redact` before it is stored or
  shown;
- a model server's answer has the known secret values masked in every field, as sent and
  encoded as HTTP carries credentials (`_encoded_forms`), and key shapes in what the model
  wrote, before the agent reads it (`WireProvider.complete`): a server may echo the key it was
  sent, and whatever the agent reads goes on into events and requests;
- as a second line, the run writer masks known values left in an event, and an episode
  those in a model request it stores (`KnownSecrets.mask_json`).

`redact` casts three nets, widest last: the values providers registered as secrets (the API
keys they read), the credential-looking values of environment variables whose names say they hold a secret,
and patterns of credentials in text (auth headers, bearer tokens, key query parameters, the
user-info part of URLs such as `http://user:KEY@host`, the shapes of OpenAI and Google API
keys). A masked credential loses its scheme word too
(`Authorization: Bearer …` becomes `Authorization: [REDACTED]`), so not even the kind of
credential is left to grep for.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit

MASK = "[REDACTED]"
_URL_SAFE = str.maketrans("+/", "-_")
# A secret's variable or query parameter names it by a whole word (OPENAI_API_KEY, HF_TOKEN,
# DB_PASSWORD, ?client_secret=, a signed URL's ?sig= or X-Amz-Signature=), not by a
# word that merely contains one (GIT_AUTHOR_NAME, PYTHON_KEYRING_BACKEND): the values this net
# finds are masked in every event and every model answer, so a developer's name must not be.
# A word may be a credential's name run together, as `apikey` is (`accesstoken`, `clientsecret`,
# `secretkey`), or a password's other names (`passphrase`, `passcode`, `passkey`); its short forms
# `pass` and `pwd` only as a name's last word (`DB_PASS`, `?pwd=`; not `PASS_THROUGH`, `pass_type`).
_PASS_WORDS = r"PASSWORD|PASSWD|PASSPHRASE|PASSCODE|PASSKEY"
_JOINED_WORDS = r"(?:ACCESS|REFRESH|AUTH|SESSION|ID|API|APP|CLIENT|CONSUMER|SECRET|PRIVATE|MASTER|SUBSCRIPTION|SECURITY)(?:TOKEN|KEY|SECRET)S?"
_SECRET_NAME = re.compile(
    rf"(?:^|_)(?:API)?(?:KEY|KEYS|TOKEN|TOKENS|SECRET|SECRETS|{_PASS_WORDS}|AUTH|BEARER|COOKIE|CREDENTIALS?|CREDS|SIG|SIGNATURE|{_JOINED_WORDS})"
    r"(?:_|$)|(?:^|_)(?:PASS|PWD)$",
    re.IGNORECASE,
)
# The shell's working folder, not a password (`DB_PWD` is one).
_NOT_SECRET_VARIABLES = frozenset({"PWD"})
# ... and its value looks like a credential: one word with a digit in it, or a long one (not
# `SOME_AUTH=disabled`, which would mask the word everywhere).
_CREDENTIAL_VALUE = re.compile(r"^(?=\S*\d)\S+$|^\S{16,}$")
# ... or, under a credential field of a request body, a pass phrase: words, 16 characters or more
# (`correct horse battery staple`; not `disabled`, nor an `eos_token`'s `<|im_end|>`).
_PASS_PHRASE = re.compile(r"^(?=.*\s)\S.{14,}\S$")
MIN_SECRET = 8  # shorter values would mask ordinary words (a run warns of a key this short)

_HEADER = re.compile(
    r"(?i)((?:proxy-)?authorization|x-api-key|x-goog-api-key|api[-_]?key)"
    r"(\"?'?\s*[:=]\s*\"?'?)"
    r"((?:bearer|basic|token)\s+[^\s\"',;}]+|[^\s\"',;}]+)"
)
_COOKIE = re.compile(r"(?i)\b((?:set-)?cookie\"?'?\s*[:=]\s*\"?'?)[^\r\n\"']+")  # every pair, to the line's end
_BEARER = re.compile(r"(?i)\b(?:bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}")
_SCHEME_WORD = re.compile(r"(?i)^(?:bearer|basic|token)\s+")  # before a credential field's value
# A query parameter's name, to be judged as the server reads it (`api%5Fkey` is `api_key`),
# and where a value ends. Only a secret's value is taken: another's (`redirect=…/?token=…`)
# may hold further parameters.
# A fragment holds parameters too (OAuth's implicit flow: `#access_token=…`).
_QUERY_NAME = re.compile(r"[?&#]([^=&#?\s\"']+)=")
_QUERY_VALUE_END = re.compile(r"[&\s\"']|$")
# Where a name's words meet, to be parted by `_` as a variable's are: `x-amz-security-token`,
# `client.secret`, `api_key[]` and `auth[token]` (PHP arrays); and camelCase's (`clientSecret`).
_NAME_SEPARATOR = re.compile(r"[-.\[\]]")
_CAMEL_GAP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
# `scheme://user:password@host`: the whole user-info part (a bare `token@host` too), up to the
# authority's last `@`, where HTTP clients end it (`user:p@ss@host` is password `p@ss`).
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/?#\s\"'<>]+)@")
_KEY_SHAPES = re.compile(r"\b(?:sk-[A-Za-z0-9_-]{16,}|AIza[0-9A-Za-z_-]{30,})")
_KEY_SHAPES_BYTES = re.compile(_KEY_SHAPES.pattern.encode())
_KEY_SHAPE_STARTS = (b"sk-", b"AIza")  # each alternative's literal start, in _KEY_SHAPES's order

_registered: set[str] = set()
_lock = threading.Lock()


def register_secret(value: str | None) -> None:
    """Mask `value` in everything redacted from now on (providers register the keys they read,
    whatever the environment variable holding them is called)."""
    if value and len(value) >= MIN_SECRET:
        with _lock:
            _registered.add(value)


def register_url_secrets(url: str | None) -> None:
    """Register the credentials `url` carries, which a server may echo bare, outside any URL:
    its user-info (an HTTP client sends `user:KEY` as a `Basic` header, base64 that
    `_encoded_forms` covers; `KEY@host` alone is a key) and its secret-named query or fragment
    parameters' values."""
    if not url:
        return
    try:
        parts = urlsplit(url)
    except ValueError:  # a host it refuses (`[oops`): the user-info before it is still a secret
        parts = None
    netloc = parts.netloc if parts else url.partition("//")[2].partition("/")[0]
    userinfo = netloc.rpartition("@")[0]
    if userinfo:
        user, has_password, password = userinfo.partition(":")
        for value in {userinfo, unquote(userinfo), unquote(password if has_password else user)}:
            register_secret(value)
    for name, value in (*parse_qsl(parts.query), *parse_qsl(parts.fragment)) if parts else ():
        if _secret_named(name):
            register_secret(value)


def register_proxy_secrets() -> None:
    """Register the credentials of the proxies the environment names (HTTP_PROXY, HTTPS_PROXY,
    ALL_PROXY, in either case), which HTTP clients send as `Proxy-Authorization` and a proxy, or
    the server behind it, may echo: as a base URL's are."""
    for name, value in os.environ.items():
        if name.lower().endswith("_proxy") and name.lower() != "no_proxy":
            register_url_secrets(value)


def _name_words(name: str, *, camel: bool = True) -> str:
    """`name`'s words parted by single `_`s: `clientSecret` -> `client_Secret`, `api_key[]` -> `api_key`."""
    parted = _NAME_SEPARATOR.sub("_", name)
    return re.sub(r"_{2,}", "_", _CAMEL_GAP.sub("_", parted) if camel else parted).strip("_")


@functools.lru_cache(maxsize=1024)  # every redaction judges the environment's names again
def _secret_named(name: str) -> bool:
    """Whether a variable's or query parameter's name says it holds a secret by one of its words
    (`HF_TOKEN`, `api_key`, `access_token`, `X-Amz-Security-Token`, `client.secret`), a
    camelCase name by its last (`accessToken`, `clientSecret`; not `keyWord`, `authMode`,
    `keyId`, ordinary parameters whose first word alone would say so)."""
    if _SECRET_NAME.search(_name_words(name, camel=False)):
        return True
    return bool(_SECRET_NAME.fullmatch(_name_words(name).rsplit("_", 1)[-1]))


# A request body's credential field, by its whole name's last word (`_name_words`): `api_key`,
# `accessToken`, `clientSecret`, `subscriptionKey`, `password`, `bearer` (as in `auth = {bearer =
# …}`), a bare `key` or `token`. Narrower than _SECRET_NAME: a body holds fields such as
# `prompt_cache_key` or `api_key_env` whose value (a model's name, a variable's name) must not
# be masked wherever it appears, as a registered value would be.
_BODY_CREDENTIAL = re.compile(
    rf"(?:^|_)(?:(?:api|subscription|access|secret|private|client|app|consumer)_?key|(?:access|refresh|id|auth|session)_?token|token"
    rf"|(?:client|app|consumer|api)_?secret|secret|{_PASS_WORDS}|pass|pwd|auth|authorization|bearer|credentials?)$|^key$",
    re.IGNORECASE,
)


def register_secret_fields(data: Any) -> None:
    """Register every credential-looking string (or pass phrase) under a body's credential
    field, its scheme word set aside, at any depth:
    a profile's `extra_body = {api_key = "…"}` goes into every request, and its value must be
    masked wherever it turns up again (the run's manifest, a server's echo), as a key read
    from the environment is."""
    if isinstance(data, dict):
        for name, value in data.items():
            if isinstance(value, str) and isinstance(name, str) and _BODY_CREDENTIAL.search(_name_words(name)):
                credential = _SCHEME_WORD.sub("", value, count=1).strip()  # `Bearer tok-…`: the token
                if _CREDENTIAL_VALUE.match(credential) or _PASS_PHRASE.match(credential):
                    register_secret(credential)
            else:
                register_secret_fields(value)
    elif isinstance(data, list):
        for value in data:
            register_secret_fields(value)


def _secret_values(extra: tuple[str, ...], encoded: bool = True) -> list[str]:
    from_env = (v for k, v in os.environ.items() if k not in _NOT_SECRET_VARIABLES and _secret_named(k) and _CREDENTIAL_VALUE.match(v))
    with _lock:
        values = {*extra, *_registered, *from_env}
    values = {form for value in values if value and len(value) >= MIN_SECRET
              for form in ((value, *_encoded_forms(value)) if encoded else (value,))}
    # Longest first, so a secret containing another is masked whole.
    return sorted(values, key=len, reverse=True)


_PERCENT_ESCAPE = re.compile(r"%[0-9A-F]{2}")


def _encoded_forms(value: str) -> set[str]:
    """How a server may echo `value` encoded as HTTP carries credentials: percent-encoded (a
    query string: as `quote` writes it, in lower-case hex, every byte escaped) and in base64 (a
    `Basic` credential, `user:KEY` encoded whole). Base64 of text that holds the value depends
    on where the value starts (three alignments) and on the bytes around it: each alignment's
    characters that hold the value's bits alone are a form, in the standard and the URL-safe
    alphabets."""
    data = value.encode()
    quoted = quote(value, safe="")
    every_byte = "".join(f"%{byte:02X}" for byte in data)  # as some clients write a query: no character left as it is
    forms = {quoted, _PERCENT_ESCAPE.sub(lambda escape: escape[0].lower(), quoted), every_byte, every_byte.lower(),
             base64.b64encode(data).decode()}  # the last: `Basic` of the value alone, whole
    for lead in range(3):
        encoded = base64.b64encode(bytes(lead) + data).decode().rstrip("=")
        start = -(-lead * 4 // 3) if lead else 0  # characters holding bits of the bytes before
        end = len(encoded) - (1 if (lead + len(data)) % 3 else 0)  # ... and of the bytes after
        core = encoded[start:end]
        forms |= {core, core.translate(_URL_SAFE)}
    forms.discard(value)
    return {form for form in forms if len(form) >= MIN_SECRET}


def redact(text: str, extra_secrets: tuple[str, ...] = ()) -> str:
    if not text:  # every model call's error field, most often empty: no environment scan
        return text
    return _masked(text, _secret_values(tuple(extra_secrets)))


def _replaced(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, MASK)
    return text


def _masked(text: str, secrets: list[str], *, prose: bool = True) -> str:
    """`text` with every net cast; without `prose`, the bare `Bearer …`/`Basic …` one is not."""
    text = _replaced(text, secrets)
    text = _HEADER.sub(lambda m: m.group(1) + m.group(2) + MASK, text)
    text = _COOKIE.sub(lambda m: m.group(1) + MASK, text)
    if prose:
        text = _BEARER.sub(MASK, text)
    text = _masked_parameters(text)
    text = _URL_USERINFO.sub(lambda m: m.group(1) + MASK + "@", text)
    return _KEY_SHAPES.sub(MASK, text)


def _masked_parameters(text: str) -> str:
    """`text` with the value of each query parameter masked, to its `&`, whose name says it holds
    a secret by the rule for environment variables' names (`key`, `api_key`, `access_token`,
    `password`, `client_secret`, `X-Amz-Security-Token`)."""
    if "=" not in text:
        return text
    parts, done = [], 0
    for name in _QUERY_NAME.finditer(text):
        if name.start() < done or not _secret_named(unquote(name.group(1))):
            continue  # inside a value masked already, or its name says no secret
        end = _QUERY_VALUE_END.search(text, name.end()).start()
        if end > name.end():
            parts += [text[done:name.end()], MASK]
            done = end
    return "".join(parts) + text[done:]


def redact_data(value: Any, extra_secrets: tuple[str, ...] = ()) -> Any:
    """`redact` applied to every string inside JSON-like data (dict keys included); the
    environment is read once, not once a string (a run's manifest has ~200)."""
    secrets = _secret_values(tuple(extra_secrets))
    return _each_string(value, lambda text: _masked(text, secrets))


# What a key shape is made of: a JSON escape of one of these characters (`\u0073` for `s`, which
# no JSON writer needs) may hide a key from a search of the bytes.
_KEY_SHAPE_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _escapes_of(characters: frozenset[str]) -> re.Pattern[bytes]:
    """JSON escapes of the printable ASCII `characters`: `\\u00XX` in either case, and `\\/`
    (PHP's writer escapes every slash). Other escapes (Go's `\\u003c` for `<`, every non-ASCII
    letter's) hide no credential made of these, and cost nothing here."""
    seconds: dict[str, set[str]] = {}  # hex digits: the first -> the seconds that follow it
    for c in characters:
        if " " < c < "\x7f" and c != "/":
            first, second = f"{ord(c):02x}"
            seconds.setdefault(first, set()).update((second, second.upper()))
    codes = "|".join(f"{first}[{''.join(sorted(digits))}]" for first, digits in sorted(seconds.items()))
    alternatives = [rb"\\u00(?:" + codes.encode() + b")"]
    if "/" in characters:
        alternatives.append(rb"\\/")
    return re.compile(b"|".join(alternatives))


def _unescaped(escape: re.Match[bytes]) -> bytes:
    return b"/" if escape[0] == b"\\/" else bytes([int(escape[0][2:], 16)])


class CredentialFinder:
    """Where imported data holds a credential (a known secret, read once when made). A file's
    bytes (`first`) by the nets that take almost nothing else: a known secret as written and
    an OpenAI or Google key's shape; a configuration document, parsed (`in_document`), by
    its credential fields and every other net but the one for prose ("basic principles"
    reads as a `Basic` credential)."""

    def __init__(self) -> None:
        self._secrets = _secret_values(())
        self._plain = [secret.encode() for secret in _secret_values((), encoded=False)]
        self._escapes = _escapes_of(_KEY_SHAPE_CHARACTERS.union(*(secret.decode() for secret in self._plain)))

    def first(self, data: bytes) -> int | None:
        """The byte offset of the first credential in `data`, or None."""
        found = [at for secret in self._plain if (at := data.find(secret)) >= 0]
        for start in _KEY_SHAPE_STARTS:  # found by bytes.find first: the regex alone reads 1.4 GB slowly
            at = data.find(start)
            while at >= 0 and not _KEY_SHAPES_BYTES.match(data, at):
                at = data.find(start, at + 1)
            if at >= 0:
                found.append(at)
        return min(found, default=None)

    def first_line(self, data: bytes, *, json_text: bool) -> int | None:
        """The 1-based line of the first credential in `data`, or None; in JSON text (`json_text`)
        also one written with escapes (`\\u0073k-…`), as a reader decodes it: each line holding
        an escape of a character a credential is made of is decoded and searched (a JSON string
        holds no raw newline, so a credential never spans two lines)."""
        at = self.first(data)
        if at is not None:
            return data.count(b"\n", 0, at) + 1
        start = 0
        while json_text and (escape := self._escapes.search(data, start)):
            begin = data.rfind(b"\n", 0, escape.start()) + 1
            end = data.find(b"\n", escape.end())
            end = len(data) if end < 0 else end
            if self.first(self._escapes.sub(_unescaped, data[begin:end])) is not None:
                return data.count(b"\n", 0, begin) + 1
            start = end
        return None

    def in_document(self, document: Any) -> str | None:
        """The first string of a parsed document that is a credential, or None: one under a
        credential field's name that looks like one once its scheme word is set aside
        (`Authorization: Bearer …`, `api_key`; not a placeholder such as `EMPTY`), or one
        holding a URL's `?api_key=` or user-info, a header written out, a key shape, a known key."""
        if isinstance(document, str):
            return document if _masked(document, self._secrets, prose=False) != document else None
        if isinstance(document, dict):
            for name, value in document.items():
                if (isinstance(value, str) and isinstance(name, str) and _BODY_CREDENTIAL.search(_name_words(name))
                        and _CREDENTIAL_VALUE.match(_SCHEME_WORD.sub("", value, count=1))):
                    return value
                if (found := self.in_document(value)) is not None:
                    return found
        elif isinstance(document, list):
            for value in document:
                if (found := self.in_document(value)) is not None:
                    return found
        return None


def mask_key_shapes(value: Any) -> Any:
    """Every string inside JSON-like data with the OpenAI and Google key shapes masked: what
    a model wrote may quote a key it read (in an image, a page) that no one registered. The
    other credential patterns are not applied to model text: `_BEARER` takes ordinary words
    ("basic principles"), and header and query patterns would rewrite the code and links a
    model quotes as evidence; a key shape is almost never anything but a key."""
    return _each_string(value, lambda text: _KEY_SHAPES.sub(MASK, text))


def _each_string(value: Any, mask: Callable[[str], str]) -> Any:
    """A copy of `value` with `mask` applied to each non-empty string, dict keys included
    (tuples become lists). A loop, not recursion: a server's answer nests as deep as orjson
    reads (1,024 levels), past Python's recursion limit."""
    if isinstance(value, str):
        return mask(value) if value else value
    if not isinstance(value, (dict, list, tuple)):
        return value
    copy: dict | list = {} if isinstance(value, dict) else [None] * len(value)
    pending = [(value, copy)]
    while pending:
        source, target = pending.pop()
        is_dict = isinstance(source, dict)
        for key, item in source.items() if is_dict else enumerate(source):
            if is_dict and isinstance(key, str) and key:
                key = mask(key)
            if isinstance(item, str):
                target[key] = mask(item) if item else item
            elif isinstance(item, (dict, list, tuple)):
                target[key] = child = {} if isinstance(item, dict) else [None] * len(item)
                pending.append((item, child))
            else:
                target[key] = item
    return copy


class KnownSecrets:
    """The secret values known when it is made (registered, and the environment's), for many
    checks: reading the environment costs ~85 us, checking an event's bytes ~0.4 us a value.
    With `encoded`, their encoded forms too (`_encoded_forms`, up to eleven a value): where a server's
    answer comes in. Past that boundary (events, request bodies built from masked answers)
    the values alone are checked, at a quarter of the cost."""

    def __init__(self, *, encoded: bool = False) -> None:
        self.values = _secret_values((), encoded)
        # JSON writes a secret holding `"`, `\\` or a control character escaped.
        forms = {form for value in self.values for form in (value, json.dumps(value, ensure_ascii=False)[1:-1])}
        self._needles = tuple(form.encode() for form in forms)

    def mask(self, value: Any) -> Any:
        """Every string inside JSON-like data (dict keys included) with the values masked."""
        return _each_string(value, lambda text: _replaced(text, self.values)) if self.values else value

    def mask_json(self, data: bytes) -> bytes:
        """JSON bytes with the values masked in their strings. Bytes that hold none, raw or
        JSON-escaped (nearly always), come back as they are, unparsed; the rest go through
        the standard `json`, which keeps integers past 64 bits (a model's tool arguments may
        hold one) where orjson refuses them."""
        if not any(map(data.__contains__, self._needles)):
            return data
        return json.dumps(self.mask(json.loads(data)), ensure_ascii=False, separators=(",", ":")).encode()
