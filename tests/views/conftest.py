"""A hand-built event log for the view tests: three runs written through the real writer,
each episode's events in the agent's order (episode.started, perception.reported, then
model.called / tool.called / gate.decided / tool.returned, judgment.made, episode.finished)
with consecutive steps, plus the gold and source-access-policy artifacts as blobs.

Run `views-main` (a `frozen_eval` release, training allowed) holds one episode per scenario:

  name        case            group  what happens
  correct     case-A          2      grounded correct investigation (search, visit, compare)
  wrong       case-A          2      wrong verdict citing a returned non-gold source
  timeout     case-B          1      times out after one search, no judgment
  err0        case-C          2      provider error before any model call
  err1        case-C          2      judgment fails validation twice (engineering error)
  dup         case-D          1      duplicate + invalid tool calls, cites evidence never returned
  blocked     case-e:blocked  1      a correctly blocked visit, and three blocked sources leaking
                                     through a search result (domain, content hash, URL prefix)
  resumed     case-F          1      attempt 1 crashed with partial events; attempt 2 finished
  strict      case-G          1      empty reasoning, an unanswered tool call, overlapping calls
  disorder    case-H          1      a tool result logged before its call
  overbudget  case-I          1      25 tool calls (budget 24)
  unfinished  case-J          1      started, never finished
  k0, k1, k2  case-K          3      three rollouts that score exactly the same

Run `views-dev` is one `correct`-shaped episode on a `development_subset` release; run
`views-prohibited` the same on a `frozen_eval` release run with --training-prohibited and a
reviewed scoring package (`ifv-scoring-gold-v1`).

Only inputs live here; every expected number is written out by hand in the test modules.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import anyio
import sys

import pytest
from pydantic import BaseModel

from eviscene.events import (
    ArtifactImported,
    EpisodeFinished,
    EpisodeScheduled,
    EpisodeStarted,
    GateDecided,
    JudgmentMade,
    ModelCalled,
    PerceptionReported,
    RunFinished,
    RunStarted,
    SourceSeen,
    TokenUsage,
    ToolCalled,
    ToolCallRequest,
    ToolReturned,
    VerdictBasisItem,
)
from eviscene.release.selection import prompt_group_id, sampling_seed
from eviscene.log import EventLog
from eviscene.rules.canonical import canonical_json
from eviscene.store import EventDraft

MAIN_RUN = "views-main"
DEV_RUN = "views-dev"
PROHIBITED_RUN = "views-prohibited"

LABELS = ["authentic", "out_of_context", "manipulated", "unverifiable"]
GIT_COMMIT = "0123456789abcdef0123456789abcdef01234567"
MODEL = "offline-react-v1"
BASE_SEED = 1729
RELEASE_ROOT = "/data/releases/views-demo"
BENCHMARK_PATH = f"{RELEASE_ROOT}/runtime_input/cases.jsonl"
GOLD_PATH = f"{RELEASE_ROOT}/private/evaluation_gold.jsonl"
POLICY_PATH = f"{RELEASE_ROOT}/private/source_access_policy.json"
T0_MICROS = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z
USAGE = TokenUsage(prompt_tokens=100, completion_tokens=20, total_tokens=120)
TOOL_SPECS = [
    {"type": "function", "function": {"name": name, "description": f"The {name} tool.", "parameters": {"type": "object", "properties": {}}}}
    for name in ("text_search", "text_image_search", "reverse_image_search", "visit", "compare_with_reference")
]


def H(text: str) -> str:
    """A stable fake sha256 named after what it stands for."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def source(evidence_id: str, url: str, content_sha256: str | None = None) -> SourceSeen:
    host = url.split("//", 1)[-1].split("/", 1)[0].lower()
    family = f"content:{content_sha256}" if content_sha256 else f"domain:{host}"
    return SourceSeen(evidence_id=evidence_id, url=url, content_sha256=content_sha256, source_family=family, published="2019-05-01")


# -- gold and policy --------------------------------------------------------------------------


def _gold(case_id: str, label: str, sources=(), facts=(), bridges=()) -> dict[str, Any]:
    return {
        "case_id": case_id,
        "label": label,
        "reference_chain": {
            "sources": [{"source_id": s, "url": u, "content_sha256": c, "role": r} for s, u, c, r in sources],
            "facts": [{"fact_id": f, "statement": f"fact {f}", "source_ids": list(ids)} for f, ids in facts],
            "bridges": [{"bridge_id": b, "source_id": s, "reference_image_sha256": img} for b, s, img in bridges],
            "benchmark_origin": [{"url": "https://factcheck.example/answer", "content_sha256": H("answer")}],
        },
    }


GOLD = {
    "case-A": _gold(
        "case-A",
        "out_of_context",
        sources=[
            ("S1", "https://origin.example/2019/flood", H("S1"), "origin"),
            # campaign tags the visited URL lacks: the page still matches (normalize_url drops utm_*)
            ("S2", "https://bridge.example/post/42?utm_source=feed&utm_medium=social", H("S2"), "bridge"),
            ("S3", "https://context.example/report", H("S3"), "context"),
        ],
        facts=[("F1", ["S1"]), ("F2", ["S2"]), ("F3", ["S2", "S3"])],
        bridges=[("B1", "S2", H("img-R1"))],
    ),
    "case-B": _gold(
        "case-B",
        "manipulated",
        sources=[("T1", "https://orig-b.example/a", H("T1"), "origin"), ("T2", "https://bridge-b.example/b", H("T2"), "bridge")],
        facts=[("G1", ["T2"])],
        bridges=[("Q1", "T2", H("img-b"))],
    ),
    "case-C": _gold("case-C", "authentic", sources=[("P1", "https://orig-c.example/", H("P1"), "origin")], facts=[("E1", ["P1"])]),
    "case-D": _gold(
        "case-D",
        "manipulated",
        sources=[("U1", "https://orig-d.example/p", H("U1"), "origin"), ("U2", "https://ctx-d.example/q", H("U2"), "context")],
        facts=[("H1", ["U2"]), ("H2", ["U1"])],
    ),
    "case-e:blocked": _gold(
        "case-e:blocked", "authentic", sources=[("V1", "https://mirror.example/other", H("V1"), "origin")], facts=[("K1", ["V1"])]
    ),
    "case-F": _gold("case-F", "unverifiable"),
    "case-G": _gold(
        "case-G",
        "out_of_context",
        sources=[("W1", "https://bridge-g.example/p", H("W1"), "bridge")],
        facts=[("L1", ["W1"])],
        bridges=[("M1", "W1", H("img-g"))],
    ),
    "case-H": _gold("case-H", "authentic", sources=[("Z1", "https://orig-h.example/z", H("Z1"), "origin")], facts=[("N1", ["Z1"])]),
    "case-I": _gold("case-I", "manipulated"),
    "case-J": _gold("case-J", "out_of_context"),
    "case-K": _gold(
        "case-K", "authentic", sources=[("Y1", "https://ctx-k.example/a", H("Y1"), "context")], facts=[("D1", ["Y1"])]
    ),
}

POLICY = {
    "policy_id": "views-policy-1",
    "blocked_domains": ["FactCheck.example"],
    "blocked_url_prefixes": ["https://www.mirror.example/answers/"],
    "blocked_content_sha256": [H("leak").upper()],
    "cache_partition": "views-partition",
}


# -- episodes ---------------------------------------------------------------------------------


@dataclass
class Attempt:
    """One attempt's events, numbered 0..n-1, and the request blobs its model calls cite."""

    episode_id: str
    attempt: int
    seed: int
    image_path: str
    drafts: list[EventDraft] = field(default_factory=list)
    blobs: list[bytes] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    clock: int = 0  # seconds after T0 for model-call timestamps

    def emit(self, payload: BaseModel) -> None:
        self.drafts.append(EventDraft(payload, episode_id=self.episode_id, attempt=self.attempt, step=len(self.drafts)))

    def start(self) -> "Attempt":
        self.emit(EpisodeStarted(attempt=self.attempt, started_at=_iso(self.clock)))
        return self

    def perceive(self, text: str = "FLOODS HIT THE CITY TODAY") -> "Attempt":
        report = PerceptionReported(
            backend="rapidocr-v1",
            ocr_text=text,
            ocr_lines=[{"text": text, "confidence": 0.98, "box": [[0, 0], [100, 0], [100, 12], [0, 12]]}],
            image_phash="f0e1d2c3b4a59687",
            report={"width": 640, "height": 480},
            latency_ms=12.0,
        )
        self.emit(report)
        self.messages = [
            {"role": "system", "content": "You are an image fact-verification agent."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": f"Verify this image.\n\nText printed in the image:\n  {text}"},
                    {"type": "image_url", "image_url": {"url": f"eviscene-image://{self.image_path}"}},
                ],
            },
        ]
        return self

    def model(
        self,
        *calls: tuple[str, str, dict[str, Any]],
        stage: str = "unified_react",
        reasoning: str = "I should look for the picture's origin.",
        content: str = "",
        started: int | None = None,
        finished: int | None = None,
    ) -> "Attempt":
        request = {
            "stage": stage,
            "messages": list(self.messages),
            "tools": TOOL_SPECS if stage == "unified_react" else [],
            "sampling_seed": self.seed,
        }
        body = canonical_json(request).encode("utf-8")
        self.blobs.append(body)
        started = self.clock if started is None else started
        finished = started + 1 if finished is None else finished
        self.clock = max(self.clock, finished) + 1
        requests = [ToolCallRequest(id=i, name=n, arguments=a) for i, n, a in calls]
        self.emit(
            ModelCalled(
                stage=stage,
                provider="offline",
                model=MODEL,
                request_sha256=hashlib.sha256(body).hexdigest(),
                content=content,
                reasoning=reasoning,
                tool_calls=requests,
                usage=USAGE,
                latency_ms=1000.0,
                started_at=_iso(started),
                finished_at=_iso(finished),
            )
        )
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if reasoning:
            message["reasoning_content"] = reasoning
        if requests:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": canonical_json(c.arguments)}}
                for c in requests
            ]
        self.messages.append(message)
        return self

    def called(self, call_id: str, tool: str, arguments: dict[str, Any]) -> "Attempt":
        digest = H(canonical_json({"tool": tool, "arguments": arguments}))
        self.emit(ToolCalled(call_id=call_id, tool=tool, arguments=arguments, arguments_sha256=digest))
        return self

    def returned(
        self, call_id: str, tool: str, status: str = "ok", sources=(), data=None, error: str = "", observation: str | None = None
    ) -> "Attempt":
        observation = observation if observation is not None else f"{tool} result for {call_id}"
        self.emit(
            ToolReturned(
                call_id=call_id, tool=tool, status=status, observation=observation, sources=list(sources),
                data=data or {}, latency_ms=5.0, error=error,
            )
        )
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": observation})
        return self

    def tool(self, call_id: str, tool: str, arguments: dict[str, Any], status: str = "ok", sources=(), data=None,
             error: str = "", gates=()) -> "Attempt":
        self.called(call_id, tool, arguments)
        for gate in gates:
            self.emit(gate)
        return self.returned(call_id, tool, status, sources, data, error)

    def judge(self, verdict: str, confidence: float, basis: list[str], *, started: int | None = None,
              finished: int | None = None) -> "Attempt":
        self.messages.append({"role": "user", "content": "Give your judgment now as one JSON object."})
        answer = {"verdict": verdict, "confidence": confidence, "verdict_basis": [{"evidence_id": e, "finding": f"{e} shows it"} for e in basis]}
        self.model(stage="unified_judgment", reasoning="Weighing the evidence.", content=canonical_json(answer),
                   started=started, finished=finished)
        self.emit(GateDecided(gate="judgment_schema", subject=self.episode_id, passed=True, reasons=[]))
        self.emit(
            JudgmentMade(
                verdict=verdict,
                confidence=confidence,
                verdict_basis=[VerdictBasisItem(evidence_id=e, finding=f"{e} shows it") for e in basis],
                rationale="As the evidence shows.",
            )
        )
        return self

    def finish(self, termination: str, *, time_taken: float, tool_calls: int, llm_calls: int, error: str = "") -> "Attempt":
        usage = TokenUsage(prompt_tokens=100 * llm_calls, completion_tokens=20 * llm_calls, total_tokens=120 * llm_calls)
        self.emit(
            EpisodeFinished(
                termination=termination, error=error, time_taken=time_taken, total_tool_calls=tool_calls,
                llm_api_calls=llm_calls, token_usage=usage,
            )
        )
        return self


def _iso(seconds: int) -> str:
    return f"2026-01-01T00:{seconds // 60:02d}:{seconds % 60:02d}+00:00"


@dataclass
class Planned:
    name: str
    case_id: str
    rollout_index: int
    group_size: int

    @property
    def prompt_group_id(self) -> str:
        return prompt_group_id(self.case_id, policy_revision=GIT_COMMIT, model=MODEL, base_sampling_seed=BASE_SEED,
                               group_size=self.group_size)

    @property
    def episode_id(self) -> str:
        if self.group_size == 1:
            return self.case_id
        return f"{self.case_id[:150]}--{self.prompt_group_id[3:11]}--r{self.rollout_index:03d}"

    @property
    def seed(self) -> int:
        return sampling_seed(BASE_SEED, self.case_id, self.rollout_index)

    @property
    def image_path(self) -> str:
        return f"runtime_input/images/{self.case_id.replace(':', '_')}.jpg"

    def attempt(self, number: int = 1) -> Attempt:
        return Attempt(self.episode_id, number, self.seed, self.image_path)


MAIN_EPISODES = [
    Planned("correct", "case-A", 0, 2),
    Planned("wrong", "case-A", 1, 2),
    Planned("timeout", "case-B", 0, 1),
    Planned("err0", "case-C", 0, 2),
    Planned("err1", "case-C", 1, 2),
    Planned("dup", "case-D", 0, 1),
    Planned("blocked", "case-e:blocked", 0, 1),
    Planned("resumed", "case-F", 0, 1),
    Planned("strict", "case-G", 0, 1),
    Planned("disorder", "case-H", 0, 1),
    Planned("overbudget", "case-I", 0, 1),
    Planned("unfinished", "case-J", 0, 1),
    Planned("k0", "case-K", 0, 3),
    Planned("k1", "case-K", 1, 3),
    Planned("k2", "case-K", 2, 3),
]


def correct_episode(p: Planned) -> Attempt:
    """case-A solved: search shows the bridge page (URL written un-normalized, no content hash)
    and a context copy (other URL, the gold content hash); visit the bridge; its reference
    image matches; cite both."""
    bridge_url = "https://WWW.Bridge.example/post/42/"
    ev1 = source("ev-1", bridge_url)
    ev2 = source("ev-2", "https://mirror.context.example/copy", H("S3"))
    a = p.attempt().start().perceive()
    a.model(("c1", "text_search", {"query": "flood bridge"}))
    a.tool("c1", "text_search", {"query": "flood bridge"}, sources=[ev1, ev2], data={"query": "flood bridge", "hits": 2})
    a.model(("c2", "visit", {"url": bridge_url}))
    a.tool("c2", "visit", {"url": bridge_url}, sources=[ev1], data={"evidence_id": "ev-1", "url": bridge_url})
    ref = f"{bridge_url}#image=img/r1.jpg"
    a.model(("c3", "compare_with_reference", {"reference_image_url": ref}))
    comparisons = [
        {"evidence_id": "ev-1", "match": True, "reference_image_sha256": H("img-R1"), "similarity": 0.97},
        {"evidence_id": "ev-1", "match": False, "reference_image_sha256": H("img-other"), "similarity": 0.31},
    ]
    a.tool("c3", "compare_with_reference", {"reference_image_url": ref}, sources=[ev1],
           data={"reference_image_url": ref, "match": True, "reference_image_sha256": H("img-R1"), "comparisons": comparisons})
    a.model(content="The bridge page dates the picture to 2019.")
    a.judge("out_of_context", 0.9, ["ev-1", "ev-2"])
    return a.finish("completed", time_taken=12.5, tool_calls=3, llm_calls=5)


def main_attempts() -> list[Attempt]:
    by = {p.name: p for p in MAIN_EPISODES}
    out = [correct_episode(by["correct"])]

    a = by["wrong"].attempt().start().perceive()
    rand = source("ev-1", "https://random.example/x", H("rand"))
    a.model(("c1", "text_search", {"query": "flood bridge"}))  # same arguments as `correct`: not a duplicate here
    a.tool("c1", "text_search", {"query": "flood bridge"}, sources=[rand])
    a.model(("c2", "visit", {"url": "https://random.example/x"}))
    a.tool("c2", "visit", {"url": "https://random.example/x"}, sources=[rand])
    a.model(content="Looks real.")
    a.judge("authentic", 0.8, ["ev-1"])
    out.append(a.finish("completed", time_taken=8.25, tool_calls=2, llm_calls=4))

    a = by["timeout"].attempt().start().perceive()
    a.model(("c1", "text_search", {"query": "case b"}))
    a.tool("c1", "text_search", {"query": "case b"}, sources=[source("ev-1", "https://bridge-b.example/b")])
    out.append(a.finish("timeout", time_taken=30.0, tool_calls=1, llm_calls=2, error="episode exceeded its 30 s timeout"))

    a = by["err0"].attempt().start().perceive()
    out.append(a.finish("error", time_taken=0.4, tool_calls=0, llm_calls=1,
                        error="ProviderError: HTTP 503 Service Unavailable after 3 retries"))

    # A refused judgment as EviScene ended it before December 2026 (termination error): the views
    # read logs written then too, and score it as any engineering error.
    a = by["err1"].attempt().start().perceive()
    a.model(content="Nothing to search.")
    a.messages.append({"role": "user", "content": "Give your judgment now as one JSON object."})
    for _ in range(2):
        a.model(stage="unified_judgment", reasoning="", content="not json")
        a.emit(GateDecided(gate="judgment_schema", subject=a.episode_id, passed=False, reasons=["invalid_json"]))
    out.append(a.finish("error", time_taken=0.6, tool_calls=0, llm_calls=3, error="judgment failed validation: invalid_json"))

    a = by["dup"].attempt().start().perceive()
    ctx = source("ev-1", "https://ctx-d.example/q")
    a.model(("c1", "text_search", {"query": "protest crowd"}), ("c2", "text_search", {"query": "protest crowd"}))
    a.tool("c1", "text_search", {"query": "protest crowd"}, sources=[ctx])
    a.tool("c2", "text_search", {"query": "protest crowd"}, sources=[ctx])
    a.model(("c3", "image_magic", {"x": 1}))
    a.tool("c3", "image_magic", {"x": 1}, status="invalid", error="unknown tool image_magic")
    a.model(content="Done.")
    a.judge("manipulated", 0.6, ["ev-1", "ev-9"])
    out.append(a.finish("completed", time_taken=5.0, tool_calls=3, llm_calls=4))

    a = by["blocked"].attempt().start().perceive()
    shown = [
        source("ev-1", "https://news.factcheck.example/a"),  # blocked domain, as a subdomain
        source("ev-2", "https://innocent.example/page", H("leak")),  # blocked content hash
        source("ev-3", "https://mirror.example/answers/case-e"),  # blocked URL prefix
        source("ev-4", "https://mirror.example/other", H("V1")),  # allowed, the gold origin
    ]
    a.model(("c1", "text_search", {"query": "beach photo"}))
    a.tool("c1", "text_search", {"query": "beach photo"}, sources=shown)
    a.model(("c2", "visit", {"url": "https://factcheck.example/answer"}))
    a.tool("c2", "visit", {"url": "https://factcheck.example/answer"}, status="blocked",
           gates=[GateDecided(gate="source_access_policy", subject="https://factcheck.example/answer", passed=False,
                              reasons=["blocked_domain"])])
    a.model(content="Enough.")
    a.judge("authentic", 0.5, ["ev-4"])
    out.append(a.finish("completed", time_taken=4.0, tool_calls=2, llm_calls=4))

    crashed = by["resumed"].attempt(1).start().perceive()
    crashed.model(("c1", "text_search", {"query": "old"}))
    crashed.called("c1", "text_search", {"query": "old"})  # the process died here
    out.append(crashed)
    a = by["resumed"].attempt(2).start().perceive()
    a.model(reasoning="The image carries no checkable claim.", content="Nothing to search.")
    a.judge("unverifiable", 1.0, [])
    out.append(a.finish("completed", time_taken=2.0, tool_calls=0, llm_calls=2))

    a = by["strict"].attempt().start().perceive()
    a.clock = 100
    a.model(("c1", "visit", {"url": "https://bridge-g.example/p"}), ("c2", "visit", {"url": "https://other-g.example/q"}),
            reasoning="", content="", started=100, finished=102)
    a.tool("c1", "visit", {"url": "https://bridge-g.example/p"}, sources=[source("ev-1", "https://bridge-g.example/p", H("W1"))])
    a.judge("out_of_context", 0.7, ["ev-1"], started=101, finished=103)  # starts before call 1 finished
    out.append(a.finish("completed", time_taken=3.0, tool_calls=1, llm_calls=2))

    a = by["disorder"].attempt().start().perceive()
    a.model(("c1", "visit", {"url": "https://orig-h.example/z"}))
    a.returned("c1", "visit", sources=[source("ev-1", "https://orig-h.example/z")])  # result before its call
    a.called("c1", "visit", {"url": "https://orig-h.example/z"})
    a.model(content="Edited.")
    a.judge("manipulated", 0.5, ["ev-1"])
    out.append(a.finish("completed", time_taken=3.5, tool_calls=1, llm_calls=3))

    a = by["overbudget"].attempt().start().perceive()
    calls = [(f"c{i}", "text_search", {"query": f"q{i}"}) for i in range(1, 26)]
    a.model(*calls)
    for call_id, tool, arguments in calls:
        a.tool(call_id, tool, arguments, status="empty")
    a.model(content="Nothing found.")
    a.judge("unverifiable", 0.5, [])
    out.append(a.finish("completed", time_taken=20.0, tool_calls=25, llm_calls=3))

    out.append(by["unfinished"].attempt().start().perceive())

    for name in ("k0", "k1", "k2"):
        a = by[name].attempt().start().perceive()
        a.model(("c1", "visit", {"url": "https://ctx-k.example/a/"}))
        a.tool("c1", "visit", {"url": "https://ctx-k.example/a/"}, sources=[source("ev-1", "https://ctx-k.example/a/")])
        a.model(content="Consistent.")
        a.judge("authentic", 0.7, ["ev-1"])
        out.append(a.finish("completed", time_taken=1.5, tool_calls=1, llm_calls=3))
    return out


# -- runs -------------------------------------------------------------------------------------


def run_started(*, release_stage: str, training_prohibited: bool, schema_version: str, episodes: int, cases: int) -> RunStarted:
    return RunStarted(
        started_at="2026-01-01T00:00:00+00:00",
        git_commit=GIT_COMMIT,
        benchmark={
            "path": BENCHMARK_PATH,
            "sha256": H("cases.jsonl"),
            "sample_count": cases,
            "episode_count": episodes,
            "limit": None,
            "shard_count": 1,
            "shard_index": 0,
            "training_prohibited": training_prohibited,
            "runtime_release": True,
            "release_id": "views-demo-v1",
            "release_stage": release_stage,
            "runtime_contract_version": "ifv-runtime-contract-v1",
            "process_reference_protocol_version": "ifv-process-reference-v0.3",
            "input_mode": "image_only",
            "decision_policy_version": "unified-react-v1",
            "evaluation_gold": None,
        },
        agent={
            "provider": "offline",
            "model": MODEL,
            "decision_policy_version": "unified-react-v1",
            "max_tool_actions": 24,
            "rollouts_per_case": 2,
            "base_sampling_seed": BASE_SEED,
        },
        source_access_policy={"active": True, "policy_id": POLICY["policy_id"], "cache_partition": POLICY["cache_partition"]},
        selection={"case_ids": None, "limit": None, "shard_count": 1, "shard_index": 0},
        config={"label_set": LABELS, "release_schema_version": schema_version, "training_prohibited": training_prohibited},
    )


def scheduled(p: Planned) -> EventDraft:
    return EventDraft(
        EpisodeScheduled(
            case_id=p.case_id,
            prompt_group_id=p.prompt_group_id,
            rollout_index=p.rollout_index,
            group_size=p.group_size,
            sampling_seed=p.seed,
            image_sha256=H(f"image:{p.case_id}"),
            image_path=p.image_path,
        ),
        episode_id=p.episode_id,
    )


class _Clock:
    def __init__(self) -> None:
        self.micros = T0_MICROS

    def stamp(self, draft: EventDraft) -> EventDraft:
        self.micros += 1000
        draft.ts = self.micros
        return draft


async def _write(log: EventLog, run_id: str, attempts: list[Attempt], opening: list[EventDraft], closing: list[EventDraft],
                 artifacts: list[tuple[str, str, bytes, int]], clock: _Clock) -> None:
    async with log.writer(run_id) as writer:
        for draft in opening:
            await writer.emit(clock.stamp(draft))
        for attempt in attempts:
            for blob in attempt.blobs:
                await writer.put_blob(blob, "application/json")
            for draft in attempt.drafts:
                await writer.emit(clock.stamp(draft))
        for kind, path, content, rows in artifacts:
            digest = await writer.put_blob(content, "application/jsonl" if path.endswith(".jsonl") else "application/json")
            await writer.emit(clock.stamp(EventDraft(ArtifactImported(
                kind=kind, path=path, sha256=digest, blob_sha256=digest, rows=rows, metadata={"release_id": "views-demo-v1"}
            ))))
        for draft in closing:
            await writer.emit(clock.stamp(draft))


def gold_blob(case_ids: list[str]) -> bytes:
    return "".join(json.dumps(GOLD[c]) + "\n" for c in case_ids).encode("utf-8")


def build_log(path) -> EventLog:
    log = EventLog(path)
    clock = _Clock()
    attempts = main_attempts()
    main_cases = sorted({p.case_id for p in MAIN_EPISODES})
    opening = [EventDraft(run_started(release_stage="frozen_eval", training_prohibited=False, schema_version="ifv-runtime-release-v0.3",
                                      episodes=len(MAIN_EPISODES), cases=len(main_cases)))]
    opening += [scheduled(p) for p in MAIN_EPISODES]
    # The crashed first attempt of `resumed` sits among the other episodes; its second
    # attempt (as `eval resume` writes it) comes last, before the scoring artifacts. One
    # writer session: a second RunWriter on the same run in the same process would reuse
    # the first one's blob file names (see test_views_writer_blobs.py).
    resumed_second = [a for a in attempts if a.episode_id == "case-F" and a.attempt == 2]
    ordered = [a for a in attempts if a not in resumed_second] + resumed_second
    artifacts = [
        ("evaluation_gold", GOLD_PATH, gold_blob(main_cases), len(main_cases)),
        ("source_access_policy", POLICY_PATH, json.dumps(POLICY).encode("utf-8"), 1),
    ]
    finished = EventDraft(RunFinished(status="completed_with_errors", completed_at="2026-01-01T01:00:00+00:00",
                                      num_episodes=len(MAIN_EPISODES), num_errors=2))
    anyio.run(_write, log, MAIN_RUN, ordered, opening, [finished], artifacts, clock)

    for run_id, stage, prohibited, schema in (
        (DEV_RUN, "development_subset", False, "ifv-runtime-release-v0.3"),
        (PROHIBITED_RUN, "frozen_eval", True, "ifv-scoring-gold-v1"),
    ):
        p = Planned("correct", "case-A", 0, 1)
        opening = [EventDraft(run_started(release_stage=stage, training_prohibited=prohibited, schema_version=schema, episodes=1, cases=1)),
                   scheduled(p)]
        closing = [EventDraft(RunFinished(status="completed", completed_at="2026-01-01T02:00:00+00:00", num_episodes=1, num_errors=0))]
        artifacts = [("evaluation_gold", GOLD_PATH, gold_blob(["case-A"]), 1)]
        anyio.run(_write, log, run_id, [correct_episode(p)], opening, closing, artifacts, clock)
    return log


@pytest.fixture(scope="session")
def views_log(tmp_path_factory) -> EventLog:
    return build_log(tmp_path_factory.mktemp("views") / "views.duckdb")


@pytest.fixture(scope="session")
def ep() -> dict[str, str]:
    """Scenario name -> episode_id in the main run."""
    return {p.name: p.episode_id for p in MAIN_EPISODES}


@pytest.fixture(scope="session")
def planned() -> dict[str, Planned]:
    return {p.name: p for p in MAIN_EPISODES}


@pytest.fixture(scope="session")
def con(views_log):
    """One snapshot with every view computed once (as exports read them)."""
    connection = views_log.connect(materialize=True)
    yield connection
    connection.close()


@pytest.fixture(scope="session")
def rows(con):
    """rows(view, run_id=MAIN_RUN) -> {episode_id: row}; key=None gives the row list."""
    cache: dict[tuple[str, str, str | None], Any] = {}

    def get(view: str, run_id: str = MAIN_RUN, key: str | None = "episode_id"):
        if (view, run_id, key) not in cache:
            table = con.sql(f'SELECT * FROM "{view}" WHERE run_id = ?', params=[run_id]).to_arrow_table().to_pylist()
            cache[(view, run_id, key)] = {row[key]: row for row in table} if key else table
        return cache[(view, run_id, key)]

    return get


# Captured at import: every test folder's conftest is named `conftest`, so looking the name
# up later could find another folder's.
_THIS_MODULE = sys.modules[__name__]


@pytest.fixture(scope="session")
def fx():
    """This module (run ids, gold, policy, H) for tests that need an input value."""
    return _THIS_MODULE
