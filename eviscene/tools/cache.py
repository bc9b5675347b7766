"""The tool-result cache: earlier results of the same call, read from the event log itself.

A result is reused when an earlier `tool.returned` (status `ok` or `empty`, not itself a
cache hit) answered a `tool.called` with the same tool and canonical arguments, in a run
whose `run.started` manifest names the same tool backend (`agent.tool_backend.backend_id`)
and the same cache partition (`eviscene.rules.source_policy.cache_partition_name`: the
policy's `cache_partition`, else `policy:<policy_id>`), no longer than `ttl_seconds` ago and
not after now (a merged log's result stamped in the future would otherwise stay fresh for
good). Results made earlier in the same run are reused too. Every reuse is recorded as `cache_hit=True` on its
`tool.returned` event, with the original call's policy blocks re-emitted as gate decisions.

Only calls whose result depends on nothing but their arguments are cached: `text_search`,
`text_image_search` and `visit` (image comparisons depend on the case image). Evidence ids
are per episode: a cached result's ids are re-assigned for the episode that reuses it, in
the observation text, the sources and the structured data alike. A cached result whose
sources, or a visit's images or links, the current policy blocks is never served (it is
fetched again instead, so the fresh call leaves them out and logs each block).

Switched by `TOOL_CACHE_ENABLED` (default off) and `TOOL_CACHE_TTL_SECONDS` (default 3600).
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Callable, Optional, Protocol, Sequence

from eviscene.release.case_image import CaseImage
from eviscene.events import GateDecided, ToolReturned
from eviscene.rules.canonical import canonical_json
from eviscene.rules.source_policy import ALLOW_ALL, SourceAccessPolicy, cache_partition_name
from eviscene.tools.interface import Toolbox
from eviscene.tools.results import POLICY_GATE, ToolOutcome, visit_listing
from eviscene.tools.specs import ALL_TOOLS, DEFAULT_RESULTS, validate_arguments

if TYPE_CHECKING:
    import pyarrow as pa

CACHED_TOOLS = ("text_search", "text_image_search", "visit")
CACHEABLE_STATUSES = ("ok", "empty")
DEFAULT_TTL_SECONDS = 3600.0
_EVIDENCE_REF = re.compile(r"\[(ev-\d+)\]")


class LogReader(Protocol):
    """What the cache reads earlier results from: an `EventLog` (the tools sit below it)."""

    def sql(self, query: str, params: dict[str, Any]) -> pa.Table: ...


def cache_partition(policy: Optional[SourceAccessPolicy]) -> str:
    """The partition a policy's results live in."""
    if policy is None:
        return cache_partition_name(None, None)
    return cache_partition_name(policy.cache_partition, policy.policy_id)


def cache_key(tool: str, arguments: dict[str, Any]) -> str:
    """Canonical (tool, arguments): whitespace in strings collapsed, defaults filled in."""
    args = {k: (" ".join(v.split()) if isinstance(v, str) else v) for k, v in arguments.items()}
    if tool in ("text_search", "text_image_search", "reverse_image_search"):
        args.setdefault("max_results", DEFAULT_RESULTS)
    return canonical_json({"tool": tool, "arguments": args})


@dataclass(frozen=True)
class CacheEntry:
    outcome: ToolOutcome
    at: float  # epoch seconds of the original tool.returned


_SQL = """
WITH runs AS (
    SELECT run_id FROM events
    WHERE type = 'run.started'
      AND json_extract_string(payload, '$.agent.tool_backend.backend_id') = $backend
      AND cache_partition_name(json_extract_string(payload, '$.source_access_policy.cache_partition'),
                               json_extract_string(payload, '$.source_access_policy.policy_id')) = $partition
)
SELECT json_extract_string(c.payload, '$.tool') AS tool,
       json_extract(c.payload, '$.arguments')::VARCHAR AS arguments,
       r.payload::VARCHAR AS returned,
       epoch(r.ts) AS at,
       (SELECT list(g.payload::VARCHAR ORDER BY g.step) FROM events g
         WHERE g.run_id = r.run_id AND g.episode_id = r.episode_id AND g.attempt = r.attempt
           AND g.type = 'gate.decided' AND json_extract_string(g.payload, '$.gate') = $gate
           AND g.step > c.step AND g.step < r.step) AS blocks
FROM events r
JOIN events c ON c.run_id = r.run_id AND c.episode_id = r.episode_id AND c.attempt = r.attempt
             AND c.type = 'tool.called' AND c.step < r.step
             AND json_extract_string(c.payload, '$.call_id') = json_extract_string(r.payload, '$.call_id')
WHERE r.type = 'tool.returned'
  AND r.run_id IN (SELECT run_id FROM runs)
  AND json_extract_string(r.payload, '$.tool') IN ('text_search', 'text_image_search', 'visit')
  AND json_extract_string(r.payload, '$.status') IN ('ok', 'empty')
  AND NOT coalesce(TRY_CAST(json_extract_string(r.payload, '$.cache_hit') AS BOOLEAN), false)
  AND epoch(r.ts) BETWEEN $since AND $now
ORDER BY r.ts
"""


class ToolCache:
    """Cached results by key, with a TTL measured from the original call."""

    def __init__(self, entries: dict[str, CacheEntry] | None = None, *, ttl_seconds: float = DEFAULT_TTL_SECONDS,
                 clock: Callable[[], float] = time.time) -> None:
        self.ttl_seconds, self.clock = float(ttl_seconds), clock
        self._entries = dict(entries or {})
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def __getstate__(self) -> dict[str, Any]:  # shipped to Ray workers: the lock stays behind
        return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _lock=threading.Lock())

    @classmethod
    def from_log(cls, log: LogReader, *, backend_id: str, partition: str, ttl_seconds: float = DEFAULT_TTL_SECONDS,
                 clock: Callable[[], float] = time.time) -> "ToolCache":
        """Every reusable result in `log` (an `EventLog`) for this backend and partition."""
        now = clock()
        rows = log.sql(_SQL, {"backend": backend_id, "partition": partition, "gate": POLICY_GATE,
                              "since": now - float(ttl_seconds), "now": now}).to_pylist()
        entries: dict[str, CacheEntry] = {}
        for row in rows:  # oldest first: the newest result for a key wins
            returned = ToolReturned.model_validate_json(row["returned"])
            blocks = [GateDecided.model_validate_json(b) for b in row["blocks"] or []]
            outcome = ToolOutcome(status=returned.status, observation=returned.observation, sources=returned.sources,
                                  blocks=blocks, data=returned.data, error=returned.error)
            entries[cache_key(row["tool"], json.loads(row["arguments"]))] = CacheEntry(outcome, float(row["at"]))
        return cls(entries, ttl_seconds=ttl_seconds, clock=clock)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, tool: str, arguments: dict[str, Any]) -> Optional[CacheEntry]:
        with self._lock:
            entry = self._entries.get(cache_key(tool, arguments))
        if entry is None or not 0 <= self.clock() - entry.at <= self.ttl_seconds:
            return None
        return entry

    def put(self, tool: str, arguments: dict[str, Any], outcome: ToolOutcome) -> None:
        with self._lock:
            self._entries[cache_key(tool, arguments)] = CacheEntry(outcome, self.clock())


class CachedToolbox:
    """A `Toolbox` (corpus or web) with the tool cache in front; itself a `Toolbox`."""

    def __init__(self, inner: Toolbox, cache: ToolCache, policy: Optional[SourceAccessPolicy] = None) -> None:
        self.inner, self.cache = inner, cache
        self.policy = policy or inner.policy or ALLOW_ALL
        self.enabled_tools = inner.enabled_tools

    def specs(self) -> list[dict[str, Any]]:
        return self.inner.specs()

    def episode(self, case_image: str | Path | CaseImage, *, text_boxes: Sequence[Sequence[Sequence[float]]] = ()) -> Any:
        return self.inner.episode(case_image, text_boxes=text_boxes)

    async def call(self, name: str, arguments: Any, episode: Any) -> ToolOutcome:
        cacheable = (name in CACHED_TOOLS and name in ALL_TOOLS and name in self.enabled_tools
                     and validate_arguments(name, arguments) is None)
        if cacheable:
            entry = self.cache.get(name, arguments)
            if entry is not None and self._allowed(entry.outcome):
                self.cache.hits += 1
                return reassign(entry.outcome, episode)
            self.cache.misses += 1
        outcome = await self.inner.call(name, arguments, episode)
        if cacheable and outcome.status in CACHEABLE_STATUSES:
            self.cache.put(name, arguments, outcome)
        return outcome

    def _allowed(self, outcome: ToolOutcome) -> bool:
        """The current policy still allows everything the cached result shows."""
        for source in outcome.sources:
            if self.policy.check(source.url, source.content_sha256):
                return False
        for result in outcome.data.get("results", []) if isinstance(outcome.data.get("results"), list) else []:
            if isinstance(result, dict) and result.get("image_url") and self.policy.check(
                    str(result["image_url"]).partition("#")[0], result.get("image_sha256")):
                return False
        # A visit's images and links, checked as a fresh visit lists them: one now blocked has the
        # page visited again, which leaves it out and logs its block. A listing of another shape
        # (a merged log's) is not vouched for either.
        images, links = outcome.data.get("images", []), outcome.data.get("links", [])
        if not (isinstance(images, list) and isinstance(links, list) and all(isinstance(link, str) for link in links)
                and all(isinstance(im, dict) and isinstance(im.get("image_url"), str)
                        and isinstance(im.get("sha256"), (str, type(None))) for im in images)):
            return False
        return not visit_listing(self.policy, images, links)[2]


def reassign(outcome: ToolOutcome, episode: Any) -> ToolOutcome:
    """`outcome` with its evidence ids re-assigned in `episode` (ids are per episode)."""
    mapping: dict[str, str] = {}
    sources = []
    for source in outcome.sources:
        page = SimpleNamespace(url=source.url, content_sha256=source.content_sha256, published=source.published)
        new = episode.source(page)
        mapping[source.evidence_id] = new.evidence_id
        sources.append(new)
    observation = _EVIDENCE_REF.sub(lambda m: f"[{mapping.get(m.group(1), m.group(1))}]", outcome.observation)
    return ToolOutcome(status=outcome.status, observation=observation, sources=sources, blocks=list(outcome.blocks),
                       data=_remap(outcome.data, mapping), error=outcome.error, cache_hit=True)


def _remap(value: Any, mapping: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: (mapping.get(v, v) if k == "evidence_id" and isinstance(v, str) else _remap(v, mapping))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_remap(v, mapping) for v in value]
    return value
