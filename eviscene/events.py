"""The typed events that tell a whole run: one pydantic model per event type.

Each payload model carries a literal `type` tag; `EventPayload` is their discriminated
union. The JSON Schemas in `schema/events/` are generated from these models
(`python -m eviscene.events`), and a test fails when they drift.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from eviscene.rules.stages import Stage


class _Payload(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FileDescriptor(_Payload):
    path: str = Field(description="Absolute path of the file when it was read.")
    sha256: str = Field(description="sha256 of the file's bytes.")
    size: int = Field(description="Bytes read.")


class RunStarted(_Payload):
    """A run begins: everything needed to reproduce it and to rebuild the seed's run_manifest.json."""

    type: Literal["run.started"] = "run.started"
    schema_version: str = Field("ifv-eval-run-v2", description="Seed run-manifest schema version.")
    started_at: str = Field(description="ISO-8601 wall-clock start time with offset.")
    git_commit: str = Field(description="Commit of the runtime checkout; '' when unknown.")
    benchmark: dict[str, Any] = Field(description="The seed manifest's `benchmark` block: paths, sha256s, counts, release fields, selection.")
    agent: dict[str, Any] = Field(description="The seed manifest's `agent` block: provider, model, limits, seeds, tool families.")
    source_access_policy: dict[str, Any] = Field(description="`active`, `policy_id`, `cache_partition`; never the policy's rules.")
    selection: dict[str, Any] = Field(default_factory=dict, description="Case selection flags: case_ids, limit, shard_count, shard_index.")
    config: dict[str, Any] = Field(default_factory=dict, description="Other run configuration (flags not in the seed manifest).")
    scoring_files: dict[str, FileDescriptor] = Field(
        default_factory=dict,
        description="The files the run is scored and audited by, by artifact kind (`evaluation_gold`, `classification_protocol`, "
        "`process_reference_protocol`, `source_access_policy`), as it read them once when it started; never their content. "
        "Its end imports exactly these bytes, and `eval resume` refuses a release whose file differs. Empty in runs "
        "recorded before files were pinned.",
    )
    output_dir: str | None = Field(
        None,
        description="The run directory `eval run` was given (absolute), which it materializes at its end; not in the seed "
        "manifest (the directory is the manifest's own). A resume's hint names it. None: none written, a generated run "
        "id's (its runs/<run_id>), or a run recorded before it was kept.",
    )


class EpisodeScheduled(_Payload):
    """An episode is planned: one rollout of one case, as seed `_rollout_specs` derives it."""

    type: Literal["episode.scheduled"] = "episode.scheduled"
    case_id: str = Field(description="The release case this episode investigates.")
    prompt_group_id: str = Field(description="`pg-` + 24 hex of sha256 over the group material (seed 000).")
    rollout_index: int = Field(description="Index of this rollout within its prompt group.")
    group_size: int = Field(description="Rollouts per case in this run.")
    sampling_seed: int = Field(description="31-bit seed from sha256(base_seed:case_id:rollout_index).")
    image_sha256: str = Field(description="sha256 of the case image, verified before scheduling.")
    image_path: str = Field(description="Image path relative to the release root.")


class EpisodeStarted(_Payload):
    """An attempt at an episode begins (a resumed episode starts a new attempt)."""

    type: Literal["episode.started"] = "episode.started"
    attempt: int = Field(description="1 for the first attempt; resume increments it.")
    started_at: str = Field(description="ISO-8601 wall-clock start time.")


class PerceptionReported(_Payload):
    """The perception step's structured report of what the image shows."""

    type: Literal["perception.reported"] = "perception.reported"
    backend: str = Field(description="Perception backend and version, e.g. `rapidocr-v1`.")
    ocr_text: str = Field("", description="Text read from the image, lines joined by newlines.")
    ocr_lines: list[dict[str, Any]] = Field(default_factory=list, description="Each OCR line: text, confidence, box.")
    image_phash: str = Field("", description="Perceptual hash of the image (hex).")
    report: dict[str, Any] = Field(default_factory=dict, description="Backend-specific structured observations.")
    cache_hit: bool = Field(False, description="True when the report came from the perception cache.")
    latency_ms: float = Field(0.0, description="Wall time of the perception step.")


class ToolCallRequest(_Payload):
    id: str = Field(description="Tool-call id, unique within the episode.")
    name: str = Field(description="Tool name.")
    arguments: dict[str, Any] = Field(description="Arguments as a JSON object.")


# A server's count of tokens: a BIGINT in the views (one past it read as NULL there while the
# run directory carried it), never negative (it would be summed, and read as context left).
TokenCount = Annotated[int, Field(ge=0, le=2**63 - 1)]


class TokenUsage(_Payload):
    prompt_tokens: TokenCount = 0
    completion_tokens: TokenCount = 0
    total_tokens: TokenCount = 0


class ModelCalled(_Payload):
    """One model call: request digest in, assistant message out."""

    type: Literal["model.called"] = "model.called"
    stage: Stage = Field(description="Agent stage that made the call.")
    provider: str = Field(description="Provider id, e.g. `offline`, `openai_compatible`.")
    model: str = Field(description="Model name as sent to the provider.")
    request_sha256: str = Field(description="sha256 of the canonical request (messages + tools + sampling); the request body is a blob.")
    content: str = Field("", description="Assistant text.")
    reasoning: str = Field("", description="Reasoning text where the provider returns it.")
    tool_calls: list[ToolCallRequest] = Field(default_factory=list, description="Tool calls the model asked for.")
    usage: TokenUsage = Field(default_factory=TokenUsage, description="Token usage as reported.")
    latency_ms: float = Field(0.0, description="Wall time of the call including retries.")
    retries: list[dict[str, Any]] = Field(default_factory=list, description="Each failed try: status, error, waited seconds.")
    error: str = Field("", description="Why the call failed for good (redacted), `timeout` when the episode's timeout cut it off; empty when it answered.")
    structured_output: Optional[str] = Field(
        None, description="Structured-output form the answer was asked in (`json_schema`, `json_object`, `text`); null without a schema."
    )
    finish_reason: str = Field(
        "", description="Why the answer ended, in the Chat Completions words whatever the wire: `stop`, `tool_calls`, "
        "`length` (it reached its completion token limit: the text or a call's arguments are cut), `content_filter`, "
        "or the provider's own word, lower case; empty when the provider named none."
    )
    started_at: str = Field("", description="ISO-8601 time the call started.")
    finished_at: str = Field("", description="ISO-8601 time the call finished.")


class SourceSeen(_Payload):
    evidence_id: str = Field(description="Id the model cites in verdict_basis.")
    url: str = Field(description="Source URL.")
    content_sha256: Optional[str] = Field(None, description="sha256 of the source text when known.")
    source_family: str = Field(description="`content:<sha256>` when content is known, else `domain:<host>`.")
    published: Optional[str] = Field(None, description="Publication date YYYY-MM-DD when known.")


class ToolCalled(_Payload):
    """The agent invokes a tool."""

    type: Literal["tool.called"] = "tool.called"
    call_id: str = Field(description="The model's tool-call id this answers.")
    tool: str = Field(description="Tool name.")
    arguments: dict[str, Any] = Field(description="Arguments as given by the model.")
    arguments_sha256: str = Field(description="sha256 of the canonical arguments; equal hashes mark duplicate actions.")


class ToolReturned(_Payload):
    """A tool's result as the model sees it."""

    type: Literal["tool.returned"] = "tool.returned"
    call_id: str = Field(description="The tool call this returns.")
    tool: str = Field(description="Tool name.")
    status: Literal["ok", "empty", "blocked", "invalid", "error"] = Field(description="`invalid` when the call was rejected as malformed or unknown.")
    observation: str = Field(description="Observation text given to the model.")
    sources: list[SourceSeen] = Field(default_factory=list, description="Sources this result exposed to the model.")
    data: dict[str, Any] = Field(default_factory=dict, description="The result's structured form (hits, page fields, comparison numbers).")
    cache_hit: bool = Field(False, description="True when served from the tool cache.")
    latency_ms: float = Field(0.0, description="Wall time of the tool.")
    error: str = Field("", description="Error text for status error/invalid.")


class GateDecided(_Payload):
    """A gate passed or stopped something: a source-policy block, a budget, a validation."""

    type: Literal["gate.decided"] = "gate.decided"
    gate: str = Field(description="Gate name, e.g. `source_access_policy`, `tool_budget`, `judgment_schema`.")
    subject: str = Field(description="What was judged (a URL digest, a call id, an episode id); never the policy's rules.")
    passed: bool = Field(description="False when the gate blocked.")
    reasons: list[str] = Field(default_factory=list, description="Machine-readable reason codes.")


class VerdictBasisItem(_Payload):
    evidence_id: str = Field(description="An evidence id returned by a tool in this episode.")
    finding: str = Field("", description="What that evidence shows.")


class JudgmentMade(_Payload):
    """The judgment stage's schema-validated verdict."""

    type: Literal["judgment.made"] = "judgment.made"
    verdict: str = Field(description="One of the release's label_set.")
    confidence: float = Field(ge=0.0, le=1.0, allow_inf_nan=False, description="Probability the verdict is right.")
    verdict_basis: list[VerdictBasisItem] = Field(default_factory=list, description="Citations of evidence returned in this episode.")
    rationale: str = Field("", description="Short free-text rationale.")


class EpisodeFinished(_Payload):
    """An attempt ends; the attempt that reaches this event is the one every view reads."""

    type: Literal["episode.finished"] = "episode.finished"
    termination: Literal["completed", "timeout", "budget_exhausted", "error"] = Field(description="How the episode ended.")
    error: str = Field("", description="Error text for termination `error`/`timeout`.")
    time_taken: float = Field(description="Seconds from episode.started to here.")
    total_tool_calls: int = Field(0, description="Tool calls made.")
    llm_api_calls: int = Field(0, description="Model calls made.")
    token_usage: TokenUsage = Field(default_factory=TokenUsage, description="Summed token usage.")

    @property
    def counts_as_error(self) -> bool:
        """As the view episode_errors counts it (the seed's rule): ended in error, or with error
        text (a timeout). Its third case, a verdict of `error`, is a judgment's, not this end's:
        only a release whose label set holds `error` could have it."""
        return self.termination == "error" or bool(self.error.strip())


class RunFinished(_Payload):
    """A run (or one resume of it) ends."""

    type: Literal["run.finished"] = "run.finished"
    status: Literal["completed", "completed_with_errors", "interrupted", "failed"] = Field(description="Run status as in the seed manifest.")
    completed_at: str = Field(description="ISO-8601 end time.")
    num_episodes: int = Field(description="Episodes finished in this invocation.")
    num_errors: int = Field(description="Episodes finished in this invocation that count as errors, as the seed counts them (view `episode_errors`: ended in error, with error text such as a timeout's, or with verdict `error`).")
    error: str = Field("", description="Run-level error text for status `failed`.")
    last_seq: Optional[int] = Field(None, description="seq of the event just before this one: the run's events 1..last_seq precede its end (stamped by the writer).")
    last_hash: Optional[str] = Field(None, description="hash of that event, the chain head this event closes (stamped by the writer); `log verify` checks both.")


class ArtifactImported(_Payload):
    """A file was imported into the log (gold, protocols, seed run files, gate artifacts)."""

    type: Literal["artifact.imported"] = "artifact.imported"
    kind: str = Field(description="Artifact kind, e.g. `evaluation_gold`, `seed_trace`.")
    path: str = Field(description="Path the file was read from.")
    sha256: str = Field(description="sha256 of the file's bytes; a re-import of the same bytes is a no-op.")
    blob_sha256: Optional[str] = Field(None, description="Blob holding the content, when stored.")
    rows: int = Field(0, description="Rows or records read.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Kind-specific fields.")


class DatasetExported(_Payload):
    """A dataset export wrote its files; the payload is its manifest."""

    type: Literal["dataset.exported"] = "dataset.exported"
    out_dir: str = Field(description="Directory written.")
    manifest: dict[str, Any] = Field(description="The export manifest, as written.")
    inputs: dict[str, Any] = Field(default_factory=dict, description="The options and log sources (run ids, import ids) the dataset views read, so a decision can be replayed.")


PAYLOAD_MODELS: tuple[type[_Payload], ...] = (
    RunStarted,
    EpisodeScheduled,
    EpisodeStarted,
    PerceptionReported,
    ModelCalled,
    ToolCalled,
    ToolReturned,
    GateDecided,
    JudgmentMade,
    EpisodeFinished,
    RunFinished,
    ArtifactImported,
    DatasetExported,
)
EventPayload = Annotated[Union[PAYLOAD_MODELS], Field(discriminator="type")]
PAYLOAD_ADAPTER: TypeAdapter[Any] = TypeAdapter(EventPayload)
EVENT_TYPES: tuple[str, ...] = tuple(model.model_fields["type"].default for model in PAYLOAD_MODELS)


def parse_payload(data: dict[str, Any]) -> BaseModel:
    """Validate a payload dict (with its `type` tag) into its typed model."""
    return PAYLOAD_ADAPTER.validate_python(data)


def schema_files() -> dict[str, str]:
    """File name -> JSON Schema text for every event payload model."""
    files = {}
    for model in PAYLOAD_MODELS:
        tag = model.model_fields["type"].default
        files[f"{tag}.schema.json"] = json.dumps(model.model_json_schema(), indent=2, sort_keys=True) + "\n"
    return files


def write_schemas(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in schema_files().items():
        (folder / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    write_schemas(Path(__file__).resolve().parent.parent / "schema" / "events")
