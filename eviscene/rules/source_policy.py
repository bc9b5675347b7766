"""The source-access policy's matcher: which sources the agent may not see (the benchmark's own
answer pages). The tool layer checks every source against it before anything of the
source reaches an observation, and the trace audit (SQL `source_policy_block`) checks
what the tools allowed by the same matcher; its rules never appear in observations or traces.

Matching:
- `blocked_domains`: the URL's host equals the domain or is a subdomain of it
  (`factcheck.org` blocks `www.factcheck.org` and `news.factcheck.org`, not `notfactcheck.org`).
- `blocked_url_prefixes`: compared after `normalize_url`, ignoring the scheme (a leak over
  http is still a leak); the prefix must end at a path boundary (`/a/story` blocks
  `/a/story`, `/a/story/2`, `/a/story?x`, not `/a/story-2`) unless the prefix itself ends
  in `/`, `?`, `&` or `=`, in which case any continuation matches.
- `blocked_content_sha256`: any content hash known for the source (page text, image bytes).
"""

from __future__ import annotations

import functools
import json
from typing import Any, Iterable, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from eviscene.rules.urls import host_of, normalize_host, normalize_url, without_scheme

BlockReason = Literal["blocked_domain", "blocked_url_prefix", "blocked_content_sha256"]


class _PolicyFile(BaseModel):
    model_config = ConfigDict(extra="ignore")

    policy_id: str = ""
    blocked_domains: list[str] = Field(default_factory=list)
    blocked_url_prefixes: list[str] = Field(default_factory=list)
    blocked_content_sha256: list[str] = Field(default_factory=list)
    cache_partition: Optional[str] = None


class SourceAccessPolicy:
    """Immutable, thread-safe matcher built from a policy file's fields."""

    def __init__(
        self,
        *,
        policy_id: str = "",
        blocked_domains: Iterable[str] = (),
        blocked_url_prefixes: Iterable[str] = (),
        blocked_content_sha256: Iterable[str] = (),
        cache_partition: Optional[str] = None,
    ) -> None:
        self.policy_id = policy_id
        self.cache_partition = cache_partition
        domains = {normalize_host(d.removeprefix("*.").lstrip(".")) for d in blocked_domains}
        self._domains = frozenset(d for d in domains if d)
        prefixes = []
        for prefix in blocked_url_prefixes:
            if not prefix.strip():
                continue
            key = without_scheme(normalize_url(prefix))
            last = prefix.strip()[-1]
            prefixes.append((key, not last.isalnum() and last != "/"))
        self._prefixes = tuple(prefixes)
        self._hashes = frozenset(h.strip().lower() for h in blocked_content_sha256 if h.strip())

    @property
    def active(self) -> bool:
        """True when the policy blocks anything at all."""
        return bool(self._domains or self._prefixes or self._hashes)

    def check(self, url: str, content_sha256: Optional[str] = None, *, other_sha256: Iterable[str] = ()) -> Optional[BlockReason]:
        """The reason `url` (with the given content hashes) is blocked, or None when allowed."""
        key = without_scheme(normalize_url(url))
        host = host_of(key)
        if host and any(host == d or host.endswith("." + d) for d in self._domains):
            return "blocked_domain"
        for prefix, open_ended in self._prefixes:
            if key == prefix or (key.startswith(prefix) and (open_ended or key[len(prefix)] in "/?")):
                return "blocked_url_prefix"
        hashes = [content_sha256, *other_sha256]
        if any(h and h.lower() in self._hashes for h in hashes):
            return "blocked_content_sha256"
        return None


ALLOW_ALL = SourceAccessPolicy(policy_id="")


def policy_from_fields(data: dict[str, Any]) -> SourceAccessPolicy:
    """The policy a policy file's JSON object describes (unknown keys ignored); ValueError
    `source access policy is malformed: <what> at <field>` when a field has the wrong type."""
    try:
        parsed = _PolicyFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ValueError(f"source access policy is malformed: {first['msg']} "
                         f"at {'.'.join(map(str, first['loc']))}") from None
    return SourceAccessPolicy(**parsed.model_dump())


@functools.lru_cache(maxsize=64)
def _parsed(policy_json: str) -> SourceAccessPolicy:
    return policy_from_fields(json.loads(policy_json))


def policy_block_reason(policy_json: str | None, url: str | None, content_sha256: str | None) -> Optional[BlockReason]:
    """`SourceAccessPolicy.check` for SQL (registered as `source_policy_block`): the reason
    the policy file's JSON blocks `url` with this content hash, or None. The trace audit
    uses it, so a source the tools allowed is never a policy violation."""
    if policy_json is None or url is None:
        return None
    return _parsed(policy_json).check(url, content_sha256)


def cache_partition_name(cache_partition: str | None, policy_id: str | None) -> str:
    """The tool-cache partition of a policy's results: its `cache_partition`, or
    `policy:<policy_id>` when it names none (`policy:` for no policy). The tool cache's
    Python side and its SQL lookup (registered as `cache_partition_name`) both use it."""
    return cache_partition or f"policy:{policy_id or ''}"
