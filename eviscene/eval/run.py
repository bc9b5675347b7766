"""Runs: plan a release's rollouts, drive their episodes concurrently into the log, and
resume an interrupted run without repeating or losing an episode."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import anyio

from eviscene.agent.episode import AgentSettings, Episode, EpisodeSpec
from eviscene.agent.perception import PERCEPTION_BACKEND, EmbeddedPerception
from eviscene.agent.provider import ImageStore, Provider
from eviscene.errors import EvisceneError, LogIntegrityError, LogLockedError, is_interruption, no_run_error
from eviscene.eval.gold_import import SCORING_KINDS, ScoringFile, import_scoring_files, read_scoring_files
from eviscene.eval.preflight import (
    check_case_pictures,
    check_no_redacted_urls,
    check_offline_labels,
    check_recorded_endpoints,
    check_same_code,
    check_scoring_files_unchanged,
    check_scoring_inputs,
    check_selection,
    check_trace_file_names,
    restate_searxng_url,
)
from eviscene.eval.options import (
    DEFAULT_OCR_CACHE_VERSION,
    RUN_SCHEMA_VERSION,
    EvalOptions,
    RunOptions,
    check_new_run_flags,
    git_commit,
    manifest_blocks,
    resolve_options,
)
from eviscene.events import EpisodeFinished, EpisodeScheduled, PerceptionReported, RunFinished, RunStarted
from eviscene.imports.plan import is_import_id
from eviscene.eval.providers import make_provider, provider_session, quota_released_on_failure, until_stopped
from eviscene.eval.ray_executor import RayExecutor, ReleaseCheck
from eviscene.eval.toolboxes import backend_breakers, make_toolbox, policy_path
from eviscene.release import (
    Case,
    Release,
    RolloutSpec,
    load_cases,
    load_release,
    positive_int,
    rollout_specs,
    select_cases,
    sha256_file,
    verify_case_images,
)
from eviscene.release.loader import cases_file
from eviscene.redaction import MASK, MIN_SECRET, redact_data
from eviscene.log import EventLog
from eviscene.rules.commands import command_line
from eviscene.rules.settled_heap import settled_heap
from eviscene.rules.source_policy import SourceAccessPolicy
from eviscene.rules.timestamps import local_now_seconds_iso
from eviscene.store import EventDraft
from eviscene.store.faults import checkpoint
from eviscene.store.layout import run_folder
from eviscene.store.locks import RunLock
from eviscene.store.manifest import MANIFEST, holds_events, read_manifest, recover_folder
from eviscene.tools import Toolbox
from eviscene.tools.policy import load_source_policy
from eviscene.tools.cache import CachedToolbox, ToolCache, cache_partition

class RunObserver(Protocol):
    """Told which run and how many episodes will run, then of each one as it finishes (e.g.
    a progress bar)."""

    def planned(self, run_id: str, episodes: int) -> None: ...

    def finished(self, spec: RolloutSpec, finished: EpisodeFinished) -> None: ...

    # Optional: `warning(message)` hears each of `RunPlan.warnings` as the run starts;
    # `provider_waiting(message | None)` each endpoint's outage (`provider_session`).


@dataclass
class RunSummary:
    run_id: str
    planned: int  # episodes of the whole run
    terminations: Counter = field(default_factory=Counter)  # how this invocation's finished episodes ended
    sealed: bool = False
    notes: list[str] = field(default_factory=list)  # one line each, for stderr: a seal left for later, a file changed mid-run
    log_seconds: float = 0.0  # the writer's time numbering, hashing and writing batches
    run_errors: int = 0  # episodes of the whole run (every invocation) that count as errors (episode_errors)
    errored: int = 0  # of those, the ones this invocation finished: its run.finished's num_errors
    stopped: str = ""  # why the run stopped with episodes unfinished: a signal or a backend outage
    resume_when: str = ""  # a backend's stop: when `eval resume` can finish the run ("when the server is back")
    # As the log says once this invocation ended (its `runs` row, what `eviscene runs` shows):
    status: str = ""  # e.g. completed, completed_with_errors, running_or_interrupted after a stop
    unfinished: int = 0  # episodes of the run that have not finished, for `eval resume`

    @property
    def ran(self) -> int:
        """Episodes this invocation finished (one stopped in flight did not run)."""
        return sum(self.terminations.values())


class RunInterrupted(EvisceneError):
    """SIGINT or SIGTERM stopped the run: every answered call is committed, the episodes in
    flight are left for `eval resume`. `summary` says how far the run got."""

    def __init__(self, summary: RunSummary, resume: str):
        super().__init__(f"run {summary.run_id} {summary.stopped}: {summary.ran} episode(s) ran, "
                         f"{summary.unfinished} unfinished; `{resume}` finishes it")
        self.summary = summary


@dataclass
class RunPlan:
    options: RunOptions  # resolved once, here; everything after reads these
    release: Release
    specs: list[RolloutSpec]
    sample_count: int
    provider: Provider
    scoring_files: dict[str, ScoringFile]  # by kind, read once: what the run is scored and audited by
    policy: SourceAccessPolicy | None
    toolbox: Toolbox
    policy_revision: str
    tool_backend: dict = field(default_factory=dict)  # the manifest's agent.tool_backend block
    warnings: list[str] = field(default_factory=list)  # said once as the run starts (`RunObserver.warning`)
    # A sharded run's: the cases its shards split (shards from this index on select none), so
    # that `runs` knows which shards make the run whole
    cases_before_sharding: int | None = None


def plan_run(flags: EvalOptions, *, revision: str | None = None, provider: Provider | None = None) -> RunPlan:
    """Resolve the flags (once: `resolve_options`), load and check the release, select cases
    and expand rollouts exactly as the seed. `revision` pins the policy revision (a resumed
    run keeps its own commit); `provider` overrides the one the flags name (a custom provider
    driven from Python)."""
    positive_int(flags.concurrency, "--concurrency")
    rollouts = positive_int(flags.rollouts_per_case, "--rollouts-per-case")
    if not flags.timeout > 0:  # nan too: every episode's deadline would fail
        raise EvisceneError("--timeout must be positive")
    run = resolve_options(flags)
    options = run.flags
    release = load_release(options.benchmark)
    release_cases = load_cases(release)
    cases = select_cases(
        release_cases,
        case_ids=options.case_ids,
        limit=options.limit,
        shard_count=options.shard_count,
        shard_index=options.shard_index,
    )
    check_selection(release_cases, cases, options.benchmark, options.shard_count, options.limit)
    pool = len(select_cases(release_cases, case_ids=options.case_ids, limit=None)) if options.shard_count > 1 else None
    policy_file = policy_path(options, release)
    scoring_files = read_scoring_files(release, policy_file)
    check_scoring_inputs(release, cases, scoring_files)
    verify_case_images(cases)
    check_case_pictures(cases)
    if provider is None:
        provider = make_provider(run)
        with quota_released_on_failure(provider):
            return _planned(run, release, cases, rollouts, policy_file, scoring_files, provider, revision, pool)
    return _planned(run, release, cases, rollouts, policy_file, scoring_files, provider, revision, pool)


def _planned(run: RunOptions, release: Release, cases: list[Case], rollouts: int, policy_file: Path | None,
             scoring_files: dict[str, ScoringFile], provider: Provider, revision: str | None, pool: int | None) -> RunPlan:
    """The rest of `plan_run`, once its provider is made (and holds its quota guard): the
    rollouts, the policy, the tools."""
    options = run.flags
    check_offline_labels(provider, release)
    revision = git_commit() if revision is None else revision
    specs = rollout_specs(
        cases,
        rollouts_per_case=rollouts,
        base_sampling_seed=options.base_sampling_seed,
        policy_revision=revision,
        model=str(provider.model),
    )
    policy = load_source_policy(policy_file, scoring_files["source_access_policy"].content) if policy_file else None
    toolbox, tool_backend = make_toolbox(options, release, policy)
    warnings = [
        f"the {role}'s API key (${settings.api_key_env}) is {len(key)} characters: too short to be found and masked in "
        "what its server writes back (words like it would be masked everywhere), so a server that echoes it puts it in the log"
        for role, settings in (("agent", run.agent), ("VLM", run.vision))
        if settings is not None and settings.provider != "offline" and settings.api_key_env
        and 0 < len(key := os.environ.get(settings.api_key_env, "").strip()) < MIN_SECRET
    ]
    if policy_file is None:  # as a policy that blocks nothing: no error, more likely a mistake than a choice
        warnings.append("the release names no source access policy (its manifest's artifacts.source_access_policy) and "
                        "--source-access-policy was not given: nothing is blocked; the agent may read the benchmark's answer pages")
    elif not policy.active:
        # Seed 000 runs under a policy that blocks nothing (enforcing nothing, `active: false` in
        # its manifest), so this is no error; but such a file is more likely a mistake than a
        # choice, and leaves the benchmark's own answer pages open to the agent.
        warnings.append(f"{policy_file}: the source access policy blocks nothing (no blocked_domains, "
                        "blocked_url_prefixes or blocked_content_sha256); the agent may read the benchmark's answer pages")
    return RunPlan(run, release, specs, len(cases), provider, scoring_files, policy, toolbox, revision, tool_backend, warnings, pool)


class _NameTaken(EvisceneError):
    """The run id is another run's: in the log, or held by another process."""


def _claim_run_id(log: EventLog, run_id: str) -> RunLock:
    """Reserve a run id the user chose (`--output-dir`'s name or `--run-id`): its run folder,
    under the run's lock from here until the run's writer ends, so that no other run takes
    the name meanwhile. A run of that name in the log is an error, never a second run under
    one id, and so is one another process holds (named). A folder left by a run killed before
    its first event was committed (nobody holding its lock, no events segment: at most the blob
    segment its first batch wrote before its events) is taken over."""
    if is_import_id(run_id):  # an import of that id would join this run's events, and be read as one run
        raise _NameTaken(f"run id {run_id!r} has the form of an import's id (`eviscene import` names what it brings in so); "
                         "choose another --output-dir or --run-id")
    folder = run_folder(log.path, run_id)
    claim = RunLock(folder / "writer.lock", run_id)
    holder = claim.try_acquire()
    if holder is not None:
        raise _NameTaken(f"run {run_id!r} is already being written in {log.path} by {holder}; choose another --output-dir or --run-id")
    try:
        recover_folder(folder)  # a killed writer's batch that reached the disk is committed, not taken over
        if holds_events(folder) or log.sql("SELECT count(*) AS n FROM events WHERE run_id = ?", [run_id])["n"][0].as_py():
            raise _NameTaken(_name_taken(log, run_id))
    except BaseException:
        _free_unrecorded_claim(claim)
        raise
    return claim


def _name_taken(log: EventLog, run_id: str) -> str:
    """Why a run id in the log is refused. Rerunning the command of an interrupted run is the
    usual way here, and what it wants is `eval resume`, so that is named first."""
    taken = f"run {run_id!r} already exists in {log.path}"
    started = log.sql("SELECT count(*) AS n FROM events WHERE run_id = ? AND type = 'run.started'", [run_id])["n"][0].as_py()
    unfinished = log.run_standing(run_id)[1] if started else 0
    if unfinished:
        return (f"{taken} with {unfinished} unfinished episode(s): `{resume_command(log, run_id)}` finishes them; "
                "or choose another --output-dir or --run-id")
    return f"{taken}; choose another --output-dir or --run-id"


def _new_run_id(log: EventLog, plan: RunPlan) -> RunLock:
    """`<timestamp>_<provider>_<model>` as the seed names run dirs, made unique in this log
    (claimed as `_claim_run_id` claims a name)."""
    stamp = datetime.now().strftime("%Y%m%d_%H%M%S")
    base = f"{stamp}_{plan.options.provider_name}_{str(plan.provider.model).replace('/', '_')}"
    for n in range(1, 1000):
        try:
            return _claim_run_id(log, base if n == 1 else f"{base}-{n}")
        except _NameTaken:
            continue  # two runs started the same second differ; any other error is the user's to see
    raise EvisceneError(f"could not find a free run id for {base}")


def _cached_perception(
    log: EventLog, version: str = PERCEPTION_BACKEND, ocr_version: str = DEFAULT_OCR_CACHE_VERSION, *,
    clock: Callable[[], float] = time.time,
) -> dict[str, PerceptionReported]:
    """Perception reports already in the log, by image sha256 (PERCEPTION_CACHE_ENABLED), from
    runs of the same perception backend, `perception_cache_version` and `ocr_cache_version`
    (a run recorded before a version existed counts as its default); the newest wins, of those
    stamped by now (a merged log's report stamped in the future would otherwise win for good)."""
    rows = log.sql(
        """
        SELECT s.payload->>'image_sha256' AS image_sha256, arg_max(p.payload::VARCHAR, p.ts) AS report
        FROM events p
        JOIN events s ON s.type = 'episode.scheduled' AND s.run_id = p.run_id AND s.episode_id = p.episode_id
        JOIN events r ON r.type = 'run.started' AND r.run_id = p.run_id
        WHERE p.type = 'perception.reported' AND p.payload->>'backend' = ?
          AND coalesce(r.payload->'agent'->>'perception_cache_version', ?) = ?
          AND coalesce(r.payload->'agent'->>'ocr_cache_version', ?) = ?
          AND epoch(p.ts) <= ?
        GROUP BY 1
        """,
        [PERCEPTION_BACKEND, PERCEPTION_BACKEND, version, DEFAULT_OCR_CACHE_VERSION, ocr_version, clock()],
    ).to_pylist()
    return {row["image_sha256"]: PerceptionReported.model_validate_json(row["report"]) for row in rows}


async def start_run(
    log: EventLog,
    options: EvalOptions,
    *,
    observer: RunObserver | None = None,
    provider: Provider | None = None,
    run_id: str | None = None,
    output_dir: str | os.PathLike[str] | None = None,
) -> RunSummary:
    """Start a run named `run_id` (as the seed names it: the output directory's name), or a
    generated `<timestamp>_<provider>_<model>` id; `output_dir`, the run directory the caller
    materializes it into, is recorded for the hints that name a resume."""
    log.require_writable()
    plan = plan_run(options, provider=provider)
    with quota_released_on_failure(plan.provider):
        # a new run only: a run made before these checks still resumes
        check_new_run_flags(plan.options, own_provider=provider is not None)
        check_trace_file_names(plan.specs)
        options = plan.options.flags  # resolved: what the manifest records and a resume rebuilds
        pins = {kind: file.descriptor() for kind, file in plan.scoring_files.items()}
        blocks = manifest_blocks(
            plan.options,
            plan.release,
            model=str(plan.provider.model),
            sample_count=plan.sample_count,
            episode_count=len(plan.specs),
            policy=plan.policy,
            scoring_files=pins,
            tool_backend=plan.tool_backend,
        )
        started = RunStarted(
            schema_version=RUN_SCHEMA_VERSION,
            started_at=local_now_seconds_iso(),
            git_commit=plan.policy_revision,
            selection={
                "case_ids": options.case_ids,
                "limit": options.limit,
                "shard_count": options.shard_count,
                "shard_index": options.shard_index,
                **({} if plan.cases_before_sharding is None else {"cases_before_sharding": plan.cases_before_sharding}),
            },
            config=redact_data({
                **options.model_dump(mode="json"),
                "release_schema_version": plan.release.schema_version,
                "label_set": list(plan.release.label_set),
            }),
            scoring_files=pins,
            output_dir=str(Path(output_dir).resolve()) if output_dir is not None else None,
            **redact_data(blocks),  # a key written into a URL (`http://user:KEY@host`) is never stored
        )
        scheduled = [
            EventDraft(
                EpisodeScheduled(
                    case_id=spec.case_id,
                    prompt_group_id=spec.prompt_group_id,
                    rollout_index=spec.rollout_index,
                    group_size=spec.group_size,
                    sampling_seed=spec.sampling_seed,
                    image_sha256=spec.case.image_sha256,
                    image_path=spec.case.image_path,
                ),
                episode_id=spec.episode_id,
            )
            for spec in plan.specs
        ]
        claim = _claim_run_id(log, run_id) if run_id is not None else _new_run_id(log, plan)  # "" is refused, not none
        todo = [(spec, 1) for spec in plan.specs]
        try:
            return await _execute(log, claim.run_id, plan, todo, [EventDraft(started), *scheduled], observer,
                                  claim=claim, to_import=list(plan.scoring_files.values()))
        except BaseException:
            _free_unrecorded_claim(claim)
            raise


def _free_unrecorded_claim(claim: RunLock) -> None:
    """A run stopped before its first commit (an interrupt while it opened) recorded nothing
    that `eval resume` could finish: its claimed folder goes, under its lock (taken again if
    the run's writer let it go), so that the name is free again. A folder another process
    holds by then is its own, and one holding anything but the lock and an empty manifest
    (segments whose manifest was deleted, say) is kept for `log verify` to name."""
    if claim.try_acquire() is not None:
        return
    try:
        folder = claim.path.parent
        if not read_manifest(folder) and {entry.name for entry in folder.iterdir()} <= {claim.path.name, MANIFEST}:
            shutil.rmtree(folder, ignore_errors=True)
    finally:
        claim.release()


async def resume_run(
    log: EventLog,
    run_id: str,
    *,
    observer: RunObserver | None = None,
    provider: Provider | None = None,
    benchmark: str | None = None,
    retry_errors: bool = False,
    executor: dict[str, Any] | None = None,
    trust_endpoints: bool = False,
    searxng_url: str | None = None,
) -> RunSummary:
    """Run again, as new attempts, exactly the scheduled episodes of `run_id` whose latest attempt
    never reached episode.finished (and, with `retry_errors`, those whose latest attempt counts as an error).
    `benchmark` points at the run's release where it moved: it must be the same release
    (release id) with the same cases.jsonl, gold, protocols and policy (sha256). `executor`
    (`concurrency`, `executor`, `ray_address`, `workers`) overrides how and where the episodes run. Only with
    `trust_endpoints` does a key go to a server, an episode to a Ray cluster or a tool to a
    private address that the log alone names (`check_recorded_endpoints`, asked only where
    episodes are left to run). `searxng_url` gives the run's search service again with the
    credentials its log masks. A resume with nothing left to run, import or end records nothing."""
    log.require_writable()
    manifest = _run_manifest(log, run_id)
    options = EvalOptions.recorded({**manifest["config"], **(executor or {})})
    if searxng_url is not None:
        options = restate_searxng_url(options, searxng_url, run_id)
    check_no_redacted_urls(options, run_id)
    episodes_left = _episodes_left(log, run_id, retry_errors)
    if not trust_endpoints and episodes_left:  # with none, no key, episode or tool goes anywhere
        check_recorded_endpoints(options, run_id, restated=executor or {})
    recorded = manifest["benchmark"]
    if benchmark is not None:
        options = options.model_copy(update={"benchmark": str(cases_file(benchmark))})
        moved = load_release(options.benchmark)
        if moved.release_id != recorded["release_id"]:
            raise EvisceneError(
                f"--benchmark {benchmark} is release {moved.release_id!r}; run {run_id} ran release {recorded['release_id']!r}"
            )
    elif not Path(options.benchmark).is_file():
        raise EvisceneError(f"{options.benchmark} is gone; point `--benchmark` at the release's new cases.jsonl")
    if sha256_file(options.benchmark) != recorded["sha256"]:
        raise EvisceneError(f"{options.benchmark} differs from the cases.jsonl run {run_id} started with (sha256); resume refused")
    if episodes_left:  # with none, only the run's directory is written again
        check_same_code(run_id, manifest["git_commit"])
    # prompt_group_id and episode ids derive from the commit: keep the run's own.
    plan = plan_run(options, revision=manifest["git_commit"], provider=provider)
    with quota_released_on_failure(plan.provider):
        imported = _imported_scoring_files(log, run_id)
        if "scoring_files" in manifest:
            check_scoring_files_unchanged(run_id, manifest["scoring_files"], plan.scoring_files)
        else:  # recorded before files were pinned: held to what it imported, if anything yet
            check_scoring_files_unchanged(run_id, imported, {k: f for k, f in plan.scoring_files.items() if k in imported})
        # The run's lock first, and a killed writer's last batch recorded under it: planned before
        # that batch is seen, a resume would run its finished episodes again, reusing their attempts.
        claim = RunLock(run_folder(log.path, run_id) / "writer.lock", run_id).acquire()
        try:
            recover_folder(claim.path.parent)
            # finished as the views say: by the latest attempt (a retry stopped midway is unfinished)
            state = log.sql(
                """
                SELECT s.episode_id, any_value(s.finished) AS finished, coalesce(max(e.attempt), 0) AS last_attempt
                FROM episodes s
                LEFT JOIN events e ON e.run_id = s.run_id AND e.episode_id = s.episode_id AND e.type IN ('episode.started', 'episode.finished')
                WHERE s.run_id = ?
                GROUP BY s.episode_id
                """,
                [run_id],
            ).to_pylist()
            by_episode = {row["episode_id"]: row for row in state}
            planned_ids = {spec.episode_id for spec in plan.specs}
            if unplanned := sorted(set(by_episode) - planned_ids):
                if options.shard_count > 1:  # the shards' episodes merged into one log, planned from the first shard's flags
                    raise EvisceneError(
                        f"run {run_id} holds the episodes of shards merged into this log: a sharded run is resumed shard by "
                        f"shard, each in its own log (`eviscene --db SHARD eval resume {run_id}`), then merged again into a new log"
                    )
                raise EvisceneError(f"run {run_id}: the release no longer yields the run's scheduled episodes (e.g. {unplanned[:3]})")
            if unscheduled := sorted(planned_ids - set(by_episode)):
                raise EvisceneError(f"run {run_id}: the release yields episodes the run never scheduled (e.g. {unscheduled[:3]})")
            retry = _error_episodes(log, run_id) if retry_errors else set()
            todo = [
                (spec, by_episode[spec.episode_id]["last_attempt"] + 1)
                for spec in plan.specs
                if not by_episode[spec.episode_id]["finished"] or spec.episode_id in retry
            ]
            if todo and not episodes_left:  # the killed writer's batch just recorded began a retry: checked as above
                if not trust_endpoints:
                    check_recorded_endpoints(options, run_id, restated=executor or {})
                check_same_code(run_id, manifest["git_commit"])
            to_import = [file for kind, file in plan.scoring_files.items() if kind not in imported]  # each once a run
            return await _execute(log, run_id, plan, todo, [], observer, to_import=to_import, ended=_has_ended(log, run_id), claim=claim)
        except BaseException:
            _free_unrecorded_claim(claim)
            raise


def _episodes_left(log: EventLog, run_id: str, retry_errors: bool) -> bool:
    """Whether a resume would run any episode: one scheduled whose latest attempt has not
    finished, or with `retry_errors` one whose latest attempt counts as an error. Read before the run's lock: a
    killed writer's last batch, recovered under the lock, may finish one it counts or begin a retry it misses
    (`resume_run` checks again then)."""
    left = log.sql("SELECT count(*) AS n FROM episodes WHERE run_id = ? AND NOT finished", [run_id])["n"][0].as_py()
    if left or not retry_errors:
        return bool(left)
    return bool(_error_episodes(log, run_id))


def _run_manifest(log: EventLog, run_id: str) -> dict[str, Any]:
    """The run's run.started payload: its manifest, with the flags it ran with (`config`)."""
    started = log.sql("SELECT manifest::VARCHAR AS payload FROM run_manifests WHERE run_id = ?", [run_id]).to_pylist()
    if not started:
        imported = log.sql("SELECT path FROM imported_runs WHERE run_id = ?", [run_id])["path"].to_pylist()
        if imported:  # `runs` lists it, so "no run" would contradict it
            raise EvisceneError(f"run {run_id} is the imported run directory {imported[0]}: an imported run holds its files, "
                                "not an agent's state to go on from; only a run EviScene ran resumes")
        raise no_run_error(run_id, log.path, log.sql("SELECT run_id FROM run_manifests")["run_id"].to_pylist())
    return json.loads(started[0]["payload"])


def resume_command(log: EventLog, run_id: str, *more: object) -> str:
    """The command that finishes a run this process started (`more`: its further words): with
    --trust-endpoints where its own flags say where a key (or its episodes) go, which a resume
    takes from the log only when told to (`check_recorded_endpoints`)."""
    options = EvalOptions.recorded(_run_manifest(log, run_id)["config"])
    if options.searxng_url and MASK in options.searxng_url:  # to be given again, its credentials in place of the mask
        more = ("--searxng-url", options.searxng_url, *more)
    try:
        check_recorded_endpoints(options, run_id)
    except EvisceneError:
        more = ("--trust-endpoints", *more)
    return log.resume_line(run_id, *more)


def _imported_scoring_files(log: EventLog, run_id: str) -> dict[str, dict]:
    """The run's imported scoring files by kind (`path`, `sha256`): the newest of each, as the
    views read them."""
    rows = log.sql(
        """
        SELECT payload->>'kind' AS kind, arg_max(payload->>'path', seq) AS path, arg_max(payload->>'sha256', seq) AS sha256
        FROM events
        WHERE run_id = ? AND type = 'artifact.imported' AND list_contains(?, payload->>'kind')
        GROUP BY 1
        """,
        [run_id, list(SCORING_KINDS)],
    ).to_pylist()
    return {row["kind"]: row for row in rows}


def _has_ended(log: EventLog, run_id: str) -> bool:
    """Whether the run's last event is the end its last invocation recorded, not a failure. A
    resume killed after it ran episodes past an earlier end (`--retry-errors`) left them after
    that end: the next resume, with nothing left to run, records the end again."""
    last = log.sql(
        "SELECT type, payload->>'status' AS status FROM events WHERE run_id = ? ORDER BY seq DESC LIMIT 1", [run_id]
    ).to_pylist()
    return bool(last) and last[0]["type"] == "run.finished" and last[0]["status"] in ("completed", "completed_with_errors")


def _error_episodes(log: EventLog, run_id: str) -> set[str]:
    """The run's episodes that count as errors (the view episode_errors, the seed's rule)."""
    return set(log.sql("SELECT episode_id FROM episode_errors WHERE run_id = ?", [run_id])["episode_id"].to_pylist())


def _run_errors(log: EventLog, run_id: str, known: set[str], notes: list[str]) -> set[str]:
    """The run's episodes that count as errors, once its episodes have ended: as the log says,
    or where another process holds the archive for writing past the reader's wait (a merge, a
    seal, a notebook's connection) as `known` says (the episodes this process saw end in error,
    and a resume's earlier ones it did not run again; a verdict of `error` is the view's alone),
    noted. The run's end is recorded either way: a busy archive is no crash."""
    try:
        return _error_episodes(log, run_id)
    except LogLockedError as exc:
        notes.append(f"the run's errors were counted from what this process saw ({exc}); "
                     f"`{command_line('runs', log=log.path)}` counts them from the log")
        return known


async def _execute(
    log: EventLog,
    run_id: str,
    plan: RunPlan,
    todo: list[tuple[RolloutSpec, int]],
    opening: list[EventDraft],
    observer: RunObserver | None,
    *,
    to_import: list[ScoringFile],
    ended: bool = False,
    claim: RunLock | None = None,
) -> RunSummary:
    """Import `to_import`, run `todo` and record the run's end, unless there was nothing to run
    or import and the run has `ended` already. The scoring files go first: the views score a
    stopped or still running run's finished episodes against them (the agent never reads the
    log)."""
    summary = RunSummary(run_id=run_id, planned=len(plan.specs))
    warn = getattr(observer, "warning", None)
    for message in plan.warnings if warn is not None else ():
        warn(message)
    options = plan.options.flags
    perceptions = (
        _cached_perception(log, options.perception_cache_version or PERCEPTION_BACKEND, options.ocr_cache_version or DEFAULT_OCR_CACHE_VERSION)
        if options.perception_cache_enabled else {}
    )
    perceive = EmbeddedPerception(perceptions, enabled=bool(options.perception_cache_enabled))
    ray = None
    if options.executor == "ray" and todo:  # joining a cluster only for episodes to run there
        ray = RayExecutor(address=options.ray_address, workers=options.workers, concurrency=options.concurrency)
    toolbox = plan.toolbox
    cache = None
    if options.tool_cache_enabled:
        cache = ToolCache.from_log(
            log,
            backend_id=plan.tool_backend.get("backend_id", ""),
            partition=cache_partition(plan.policy),
            ttl_seconds=options.tool_cache_ttl_seconds,
        )
        toolbox = CachedToolbox(plan.toolbox, cache, plan.policy)
    settings = AgentSettings(
        label_set=plan.release.label_set,
        timeout_seconds=options.timeout,
        image_access_mode=options.image_access_mode,
    )
    images = ImageStore()
    queue = list(todo)
    # What the run's end counts its errors from where the archive is held for writing then
    # (`_run_errors`): a resume's earlier errors, read now, and this invocation's in memory.
    earlier_errors = set() if opening else _error_episodes(log, run_id)
    errored_now: set[str] = set()

    def record(spec: RolloutSpec, finished: EpisodeFinished) -> None:
        summary.terminations[finished.termination] += 1
        if finished.counts_as_error:
            errored_now.add(spec.episode_id)
        if observer is not None:
            observer.finished(spec, finished)

    async with provider_session(plan.provider, images, perceive, observer, backend_breakers(plan.toolbox)) as perceive, log.writer(run_id, lock=claim) as writer:
        # Once the run is this process's (a run another process writes is refused before any
        # progress), as its episodes start to be scheduled, on Ray before its workers start: a
        # progress bar's clock, rate and elapsed time alike, counts from here on both executors.
        if observer is not None:
            observer.planned(run_id, len(queue))
        for draft in opening:
            await writer.emit(draft)

        async def worker() -> None:
            while queue:
                spec, attempt = queue.pop(0)
                image_url = images.add(spec.case.image_sha256, spec.case.image_file)
                episode = Episode(
                    EpisodeSpec(
                        episode_id=spec.episode_id,
                        case_id=spec.case_id,
                        image_file=spec.case.image_file,
                        image_sha256=spec.case.image_sha256,
                        sampling_seed=spec.sampling_seed,
                        attempt=attempt,
                    ),
                    provider=plan.provider,
                    toolbox=toolbox,
                    perceive=perceive,
                    settings=settings,
                    writer=writer,
                    image_url=image_url,
                )
                record(spec, await episode.run())

        async def workers() -> None:
            if ray is not None:
                check = ReleaseCheck(options.benchmark, plan.release.release_id, sha256_file(options.benchmark))
                await ray.run(queue, options=plan.options, check=check, policy=plan.policy, perception=perceptions,
                              tool_cache=cache, writer=writer, on_finished=record)
            else:
                with settled_heap():  # the release, corpus indexes and OCR models stay as they are
                    async with anyio.create_task_group() as group:
                        for _ in range(min(max(1, options.concurrency), max(1, len(queue)))):
                            group.start_soon(worker)

        async def episodes_committed() -> None:
            await import_scoring_files(writer, plan.release, to_import)
            await workers()
            # Still inside until_stopped: past this, an interrupt (a plain KeyboardInterrupt, whose
            # writer commits nothing more) costs only what `eval resume` redoes without a model.
            await writer.sync()

        try:
            # SIGINT/SIGTERM or a provider outage stop the episodes: the writer commits everything
            # emitted as it closes, no run.finished is written, and `eval resume` finishes the run.
            stop = await until_stopped(episodes_committed)
            if stop is None:
                checkpoint("run.episodes_ended")
                summary.notes += filter(None, (file.change_note(run_id) for file in plan.scoring_files.values()))
                await writer.sync()  # this invocation's episodes on the log, to count the whole run's errors
                rerun = {spec.episode_id for spec, _ in todo}
                run_errors = _run_errors(log, run_id, (earlier_errors - rerun) | errored_now, summary.notes)
                summary.run_errors, summary.errored = len(run_errors), len(run_errors & rerun)
        except Exception as exc:
            if is_interruption(exc):  # Ctrl-C during a query after the episodes: no crash; `eval resume` finishes the run
                raise
            # A crash (not one episode's failure, which stays in its episode) fails the run, as the seed does.
            crash = exc
            while isinstance(crash, BaseExceptionGroup) and len(crash.exceptions) == 1:  # task groups' wrapping
                crash = crash.exceptions[0]
            await writer.emit(EventDraft(RunFinished(
                status="failed", completed_at=local_now_seconds_iso(), num_episodes=sum(summary.terminations.values()),
                num_errors=len(errored_now), error=f"{type(crash).__name__}: {crash}",  # the log may not hold them yet
            )))
            await writer.sync()  # leaving the writer with an exception cancels what is still queued
            if isinstance(crash, EvisceneError):  # said in one line, as every EvisceneError is
                raise crash from None
            raise
        if stop is None and (todo or to_import or not ended):
            await writer.emit(
                EventDraft(
                    RunFinished(
                        status="completed_with_errors" if summary.run_errors else "completed",
                        completed_at=local_now_seconds_iso(),
                        num_episodes=len(todo),
                        num_errors=summary.errored,
                    )
                )
            )
    summary.log_seconds = writer.commit_seconds
    if stop is None:
        try:
            log.seal([run_id])
            summary.sealed = True
        except LogLockedError as exc:
            summary.notes.append(f"run not sealed yet ({exc}); `{command_line('log', 'seal', log=log.path)}` catches up later")
        except LogIntegrityError:
            raise
        except EvisceneError as exc:  # an archive that cannot be written (a full disk): the live segments still read
            summary.notes.append(f"run not sealed: {exc}")
        try:
            summary.status, summary.unfinished = log.run_standing(run_id)
        except LogLockedError as exc:  # every episode has finished: a shard's run is whole only with its other shards
            summary.status = ("incomplete" if plan.options.flags.shard_count > 1
                              else "completed_with_errors" if summary.run_errors else "completed")
            summary.notes.append(f"the run's status is as this process saw it end ({exc}); "
                                 f"`{command_line('runs', log=log.path)}` reads it from the log")
    else:
        summary.stopped, summary.resume_when = stop.reason, stop.resume_when
        summary.status, summary.unfinished = log.run_standing(run_id)
    if stop is not None and stop.signal:  # a Ctrl-C stops the caller too (a sweep's next run), its work kept
        raise RunInterrupted(summary, resume_command(log, run_id))
    return summary
