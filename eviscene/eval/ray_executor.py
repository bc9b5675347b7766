"""Episodes on a Ray cluster (`eval run --executor ray`): actors run episodes, the driver
stays the run's single writer.

Each `EpisodeWorker` actor loads the release from the path the driver names (every worker
checks the release id and the sha256 of `cases.jsonl` before it takes an episode, so a node
that sees another copy refuses), builds the tools (under the source-access policy the driver
read when the run started) and the provider once, and runs many episodes at once with the
same anyio code as a local run. An episode streams its events back
to the driver as they happen (a Ray streaming generator); the driver numbers, chains and
commits them through its `RunWriter`, so `seq` and the hash chain stay per run.

Faults: Ray restarts a dead actor (`max_restarts`); the episode method itself is never
retried by Ray (`max_task_retries=0`), because the driver has already committed the partial
attempt's events: it schedules the episode again as the next attempt, as `eval resume` does,
and every view reads only the attempt that finished.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import anyio

from eviscene.errors import EvisceneError, outage_in
from eviscene.rules.timestamps import now_micros
from eviscene.store.writer import EventDraft

if TYPE_CHECKING:
    from eviscene.eval.options import RunOptions
    from eviscene.events import EpisodeFinished, PerceptionReported
    from eviscene.release import RolloutSpec
    from eviscene.rules.source_policy import SourceAccessPolicy
    from eviscene.tools import Toolbox
    from eviscene.tools.cache import ToolCache

# Test hook: `exit-in-tool:<case_id>` makes the worker process exit (os._exit) at the first
# tool call of that case's first attempt, as a crashed node would; its next instance takes
# _FAULT_RESTART_SECONDS to start, as one on a fresh node does, so the driver's calls meet it restarting.
FAULT_ENV = "EVISCENE_RAY_FAULT"
_FAULT_RESTART_SECONDS = 3.0
ACTOR_RESTARTS = 8
_STREAM_SECONDS = 0.2  # how often a worker hands an episode's new events to the driver
_RESTART_WAIT_SECONDS = 1.0
_IDLE_POLL_SECONDS = 0.2  # a free slot's look at the queue while other slots' episodes are in flight
_START_SECONDS = 600.0  # for every worker to load the release and its tools


def ray_module() -> Any:
    try:
        import ray
    except ImportError:
        # EviScene installs from its checkout: a package index may hold another project of that name.
        raise EvisceneError("--executor ray needs Ray: pip install '.[ray]' in the EviScene checkout") from None
    return ray


@dataclass(frozen=True)
class ReleaseCheck:
    """What every worker must see at the benchmark path before it runs an episode."""

    benchmark: str
    release_id: str
    cases_sha256: str


class _Relay:
    """An episode's writer on a worker: keeps its events and blobs, in order, for the driver."""

    def __init__(self) -> None:
        self.items: list[Any] = []

    async def emit(self, draft: EventDraft) -> None:
        if draft.ts is None:
            draft.ts = now_micros()
        self.items.append(draft)

    async def put_blob(self, content: bytes, media_type: str) -> str:
        self.items.append(("blob", content, media_type))
        return hashlib.sha256(content).hexdigest()

    def take(self) -> list[Any]:
        items, self.items = self.items, []
        return items


class _ExitInTool:
    """The FAULT_ENV hook: the worker process exits inside the episode's first tool call."""

    def __init__(self, toolbox: Toolbox):
        self._toolbox = toolbox
        self.policy, self.enabled_tools = toolbox.policy, toolbox.enabled_tools

    def specs(self) -> list[dict[str, Any]]:
        return self._toolbox.specs()

    def episode(self, case_image: Any, *, text_boxes: Any = ()) -> Any:
        return self._toolbox.episode(case_image, text_boxes=text_boxes)

    async def call(self, *args: Any, **kwargs: Any) -> Any:
        os._exit(17)


class EpisodeWorker:
    """One Ray actor: the release, tools and provider of a run, and many episodes at once."""

    def __init__(self, run: RunOptions, check: ReleaseCheck, policy: SourceAccessPolicy | None,
                 caches: tuple[dict[str, PerceptionReported], ToolCache | None]):
        from eviscene.agent.episode import AgentSettings
        from eviscene.agent.perception import EmbeddedPerception
        from eviscene.agent.provider import ImageStore
        from eviscene.eval.toolboxes import worker_toolbox
        from eviscene.release import load_release, sha256_file
        from eviscene.tools.pillow_warnings import quiet_decompression_bomb_warning

        quiet_decompression_bomb_warning()  # this worker process is the run's own, as the program's is
        self.options = run  # resolved by the driver: a worker reads no profile or environment again
        release = load_release(check.benchmark)
        seen = (release.release_id, sha256_file(check.benchmark))
        if seen != (check.release_id, check.cases_sha256):
            raise EvisceneError(
                f"worker on {os.uname().nodename} sees release {seen[0]} (cases sha256 {seen[1][:12]}…) at "
                f"{check.benchmark}, not {check.release_id} ({check.cases_sha256[:12]}…); give every node the same release"
            )
        perception, tool_cache = caches
        self.toolbox = worker_toolbox(run.flags, release, policy, tool_cache)
        self.settings = AgentSettings(label_set=release.label_set, timeout_seconds=run.flags.timeout,
                                      image_access_mode=run.flags.image_access_mode)
        self.images = ImageStore()
        self.perceive: Any = EmbeddedPerception(perception, enabled=bool(perception))
        self.provider: Any = None
        self._session: Any = None
        self._fault = os.environ.get(FAULT_ENV, "")
        if self._fault and ray_module().get_runtime_context().was_current_actor_reconstructed:
            time.sleep(_FAULT_RESTART_SECONDS)

    def ready(self) -> str:
        return os.uname().nodename

    async def _open(self) -> None:
        if self._session is not None:
            return
        from eviscene.eval.providers import make_provider, provider_session

        self.provider = make_provider(self.options, guarded=False)
        self._session = provider_session(self.provider, self.images, self.perceive)
        self.perceive = await self._session.__aenter__()

    async def run(self, spec: RolloutSpec, attempt: int):
        """Run one attempt of an episode; yields lists of its events as they happen, then
        `("finished", EpisodeFinished)`."""
        from eviscene.agent.episode import Episode, EpisodeSpec

        await self._open()
        relay = _Relay()
        toolbox = self.toolbox
        if self._fault == f"exit-in-tool:{spec.case_id}" and attempt == 1:
            toolbox = _ExitInTool(self.toolbox)
        episode = Episode(
            EpisodeSpec(episode_id=spec.episode_id, case_id=spec.case_id, image_file=spec.case.image_file,
                        image_sha256=spec.case.image_sha256, sampling_seed=spec.sampling_seed, attempt=attempt),
            provider=self.provider, toolbox=toolbox, perceive=self.perceive, settings=self.settings, writer=relay,
            image_url=self.images.add(spec.case.image_sha256, spec.case.image_file),
        )
        result: list[EpisodeFinished] = []
        done = anyio.Event()

        async def run_episode() -> None:
            result.append(await episode.run())
            done.set()

        async with anyio.create_task_group() as group:
            group.start_soon(run_episode)
            while not done.is_set():
                with anyio.move_on_after(_STREAM_SECONDS):  # a finished episode goes back at once
                    await done.wait()
                if relay.items:
                    yield relay.take()
        if relay.items:  # emitted while the driver was taking the last batch
            yield relay.take()
        yield ("finished", result[0])


class RayExecutor:
    """Starts (or joins) a Ray cluster and the run's worker actors; runs the queued episodes
    on them, committing every event through the driver's writer."""

    def __init__(self, *, address: str | None, workers: int | None, concurrency: int):
        self.ray = ray_module()
        if not self.ray.is_initialized():
            self.ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
        cpus = int(self.ray.cluster_resources().get("CPU", 1))
        self.workers = workers if workers is not None else max(1, cpus)
        if self.workers < 1:
            raise EvisceneError("--workers must be at least 1")
        if self.workers > cpus:
            raise EvisceneError(f"--workers {self.workers}: the Ray cluster has {cpus} CPU(s), one per worker")
        self.concurrency = max(1, concurrency)

    async def run(self, todo: list[tuple[RolloutSpec, int]], *, options: RunOptions, check: ReleaseCheck,
                  policy: SourceAccessPolicy | None, perception: dict[str, PerceptionReported],
                  tool_cache: ToolCache | None, writer: Any,
                  on_finished: Callable[[RolloutSpec, EpisodeFinished], None]) -> None:
        """Start the workers, wait until every one has loaded the release and its tools, then
        run `todo` on them."""
        ray = self.ray
        # The driver's EVISCENE_* settings (runtime dirs, the fault hook) hold on every node.
        env = {k: v for k, v in os.environ.items() if k.startswith("EVISCENE_")}
        actor_class = ray.remote(num_cpus=1, max_restarts=ACTOR_RESTARTS, max_task_retries=0,
                                 max_concurrency=self.concurrency, runtime_env={"env_vars": env})(EpisodeWorker)
        caches = ray.put((perception, tool_cache))
        actors = [actor_class.remote(options, check, policy, caches) for _ in range(self.workers)]
        try:  # a worker that cannot load the release, or sees another one, stops the run here
            await anyio.to_thread.run_sync(lambda: ray.get([actor.ready.remote() for actor in actors], timeout=_START_SECONDS))
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError) as exc:
            for actor in actors:
                ray.kill(actor, no_restart=True)
            raise EvisceneError(f"the Ray workers could not start: {_cause(exc)}") from None
        queue = list(todo)
        unfinished = len(todo)
        losses: dict[str, int] = {}

        async def slot(actor: Any) -> None:
            # A slot stays while any episode is unfinished: one its actor's loss gives back is
            # taken by whichever slot is free, though the queue was empty when it came back.
            nonlocal unfinished
            while unfinished:
                if not queue:
                    await anyio.sleep(_IDLE_POLL_SECONDS)
                    continue
                spec, attempt = queue.pop(0)
                committed = False
                try:
                    finished = None
                    stream = actor.run.options(num_returns="streaming").remote(spec, attempt)
                    async for ref in stream:
                        items = await ref
                        if isinstance(items, tuple):
                            finished = items[1]
                            break
                        for item in items:
                            if isinstance(item, tuple):
                                await writer.put_blob(item[1], item[2])
                            else:
                                await writer.emit(item)
                        committed = True
                    if finished is None:  # the stream ended without the episode's end: its worker died
                        raise ray.exceptions.RayActorError()
                    on_finished(spec, finished)
                    unfinished -= 1
                except ray.exceptions.ActorUnavailableError:  # restarting: same attempt unless it started
                    queue.append((spec, attempt + 1 if committed else attempt))
                    if not await restarted(actor):
                        return
                except ray.exceptions.RayActorError as exc:
                    losses[spec.episode_id] = losses.get(spec.episode_id, 0) + 1
                    if losses[spec.episode_id] > ACTOR_RESTARTS:
                        raise EvisceneError(f"episode {spec.episode_id} lost its worker {ACTOR_RESTARTS + 1} times: {_cause(exc)}") from None
                    # Partial events on the log make the rerun the next attempt, as on resume.
                    queue.append((spec, attempt + 1 if committed else attempt))
                    if not await restarted(actor):
                        return
                except ray.exceptions.RayTaskError as exc:
                    outage = outage_in(exc.cause)
                    if outage is not None:  # every worker's backend is down: the run stops
                        raise outage from None
                    raise EvisceneError(f"Ray worker failed on {spec.episode_id}: {_cause(exc)}") from None

        async def restarted(actor: Any) -> bool:
            """Wait, taking no episode, until the lost actor answers again: its node gone, Ray
            may find no place to restart it, and an episode handed to it would wait forever.
            False when it is dead for good, or every episode finished meanwhile."""
            ends = 0
            while unfinished:
                ready = actor.ready.remote()
                done: list[Any] = []
                while unfinished and not done:
                    done, _ = await anyio.to_thread.run_sync(lambda: ray.wait([ready], timeout=_RESTART_WAIT_SECONDS))
                if not done:
                    return False
                try:
                    await anyio.to_thread.run_sync(ray.get, ready)
                    return True
                except ray.exceptions.ActorUnavailableError:  # still restarting: a call fails at once, so ask again
                    await anyio.sleep(_RESTART_WAIT_SECONDS)
                except ray.exceptions.RayActorError:
                    # One instance's end (the call reached it as it died), or its restarts spent:
                    # an actor ends at most ACTOR_RESTARTS + 1 times.
                    ends += 1
                    if ends > ACTOR_RESTARTS:
                        return False
            return False

        async def slots() -> None:
            async with anyio.create_task_group() as group:
                for actor in actors:
                    for _ in range(self.concurrency):
                        group.start_soon(slot, actor)
            if unfinished:  # every actor dead for good
                raise EvisceneError(f"every Ray worker was lost for good, {unfinished} episode(s) unfinished; "
                                    "`eviscene eval resume` finishes them once the cluster has room")

        try:
            await slots()
        finally:
            for actor in actors:
                ray.kill(actor, no_restart=True)


def _cause(exc: BaseException) -> str:
    """The first line of the worker's own error inside Ray's wrapping."""
    text = str(getattr(exc, "error_msg", "") or exc)
    for line in text.splitlines():
        if "EvisceneError:" in line:
            return line.split("EvisceneError:", 1)[1].strip()
    return text.strip().splitlines()[-1] if text.strip() else type(exc).__name__
