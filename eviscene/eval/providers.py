"""Which provider a run drives, from its profile and flags, and what the run holds for it.

`make_provider(run)` builds the providers of a run's resolved settings (`RunOptions`: profile,
then flags), reads the API key from the environment variable they name, and takes the
provider's run guard, so a second run on the same quota fails before anything is written.
With `separate_vlm` it pairs the agent's provider with the VLM that describes each image.
`provider_session` is the run's side: it hands the providers the run's images, puts the VLM
into the perception step, and at the end closes connections and releases the guards. `until_stopped` runs the episodes so that
a provider outage or SIGINT/SIGTERM stops them without failing any.
"""

from __future__ import annotations

import signal
import weakref
from collections.abc import Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable

import anyio

from eviscene.agent.provider import ImageStore, ModelRequest, ModelResponse, Provider
from eviscene.errors import BackendOutage, outage_in
from eviscene.providers import OfflineProvider
from eviscene.providers.chat_completions import ChatCompletionsProvider
from eviscene.providers.gemini import GeminiProvider
from eviscene.providers.guard import RunGuard
from eviscene.providers.http import Endpoint, RetryPolicy
from eviscene.providers.profiles import PROVIDER_KINDS, ProviderSettings, api_key
from eviscene.providers.responses import ResponsesProvider
from eviscene.providers.vlm import Perceive, VlmPerception
from eviscene.providers.wire import WireProvider
from eviscene.rules.circuit_breaker import CircuitBreaker

if TYPE_CHECKING:
    from eviscene.eval.options import RunOptions

PROVIDERS = tuple(PROVIDER_KINDS)
_WIRES: dict[str, type[WireProvider]] = {
    "chat_completions": ChatCompletionsProvider,
    "responses": ResponsesProvider,
    "interactions": GeminiProvider,
}


def build_provider(settings: ProviderSettings) -> Provider:
    """A provider from resolved settings; the key is read from its environment variable here."""
    if settings.provider == "offline":
        return OfflineProvider(model=settings.model)
    assert settings.wire_api is not None and settings.base_url is not None and settings.model is not None
    endpoint = Endpoint(
        base_url=settings.base_url,
        api_key=api_key(settings),
        auth_header=settings.key_header,
        timeout_seconds=settings.timeout,
        connect_timeout_seconds=settings.connect_timeout,
        max_inflight=settings.max_inflight,
        retry=RetryPolicy(max_retries=settings.max_retries, backoff_seconds=settings.backoff_seconds),
        outage_timeout_seconds=settings.outage_timeout,
    )
    common: dict[str, Any] = dict(
        name=settings.provider, model=settings.model, endpoint=endpoint, thinking=settings.thinking, extra_body=settings.extra_body,
        structured_output=settings.structured_output, max_tokens=settings.max_tokens, context_window=settings.context_window,
    )
    if settings.wire_api == "chat_completions":
        return ChatCompletionsProvider(send_reasoning=settings.send_reasoning, tool_results=settings.tool_results, **common)
    return _WIRES[settings.wire_api](**common)


class RunProvider:
    """The agent's provider with what a run holds for it: the VLM describing images
    (`separate_vlm`) and the quota guards. Model calls go to the agent's provider."""

    def __init__(self, agent: Provider, *, vision: Provider | None = None, guards: list[RunGuard] | None = None):
        self.agent, self.vision, self.guards = agent, vision, list(guards or [])
        self.name, self.model = agent.name, agent.model
        for guard in self.guards:  # released with the object if a run never reached its session
            weakref.finalize(self, guard.release)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return await self.agent.complete(request)

    # The loop reads the agent model's limits through the run's provider, and a window it
    # learns from a rejection is kept by the agent's provider for every episode.
    @property
    def max_tokens(self) -> dict[str, int]:
        return getattr(self.agent, "max_tokens", {})

    @property
    def context_window(self) -> int | None:
        return getattr(self.agent, "context_window", None)

    @context_window.setter
    def context_window(self, value: int | None) -> None:
        self.agent.context_window = value  # type: ignore[attr-defined]

    def breakers(self) -> list[Any]:
        return [p.client.breaker for p in (self.agent, self.vision) if isinstance(p, WireProvider)]

    def bind_images(self, images: ImageStore) -> None:
        for provider in (self.agent, self.vision):
            if isinstance(provider, WireProvider):
                provider.images = images

    async def aclose(self) -> None:
        try:
            for provider in (self.agent, self.vision):
                if isinstance(provider, WireProvider):
                    await provider.aclose()
        finally:
            self.release_quota()

    def release_quota(self) -> None:
        for guard in self.guards:
            guard.release()


@contextmanager
def quota_released_on_failure(provider: Provider) -> Iterator[None]:
    """Until a run's session holds `provider` (and releases its guards as it closes), a failure
    releases them at once, not when the provider is collected: a refused resume would
    otherwise keep its quota from the next run this process starts."""
    try:
        yield
    except BaseException:
        if isinstance(provider, RunProvider):
            provider.release_quota()
        raise


def make_provider(run: RunOptions, *, guarded: bool = True) -> Provider:
    """The run's provider. `guarded=False` takes no quota guard: a Ray worker's provider,
    whose driver holds the guard for the whole run."""
    agent, vision = run.agent, run.vision
    # The agent and its VLM on one endpoint with one key are one quota: one guard.
    quotas = {s.quota: s for s in (agent, vision) if guarded and s is not None and s.provider != "offline"}
    guards: list[RunGuard] = []
    try:
        for s in quotas.values():
            guards.append(RunGuard.acquire(provider=s.provider, base_url=s.base_url or "", api_key_env=s.api_key_env))
        provider = build_provider(agent)
        describer = build_provider(vision) if vision is not None and vision.provider != "offline" else None
    except BaseException:
        for guard in guards:
            guard.release()
        raise
    if describer is None and not guards:
        return provider
    return RunProvider(provider, vision=describer, guards=guards)


@asynccontextmanager
async def provider_session(
    provider: Provider, images: ImageStore, perceive: Perceive, observer: Any = None,
    tool_breakers: Sequence[CircuitBreaker] = (),
) -> AsyncIterator[Perceive]:
    """Bind the run's images, wrap perception for `separate_vlm`; close and release at the end.
    An observer with a `provider_waiting(message | None)` method hears each endpoint's outage,
    and each of `tool_breakers`' (the search service's). Yields the perception step the
    episodes use."""
    breakers = list(tool_breakers)
    if isinstance(provider, RunProvider):
        provider.bind_images(images)
        if provider.vision is not None:
            perceive = VlmPerception(perceive, provider.vision, images)
        breakers += provider.breakers()
    elif isinstance(provider, WireProvider):  # a provider handed to the run from Python
        provider.images = images
        breakers.append(provider.client.breaker)
    listener = getattr(observer, "provider_waiting", None)
    for breaker in breakers:
        breaker.listener = listener
    try:
        yield perceive
    finally:
        if isinstance(provider, (RunProvider, WireProvider)):
            with anyio.CancelScope(shield=True):
                await provider.aclose()


@dataclass(frozen=True)
class Stop:
    reason: str
    signal: bool  # SIGINT/SIGTERM, else a backend outage (a model endpoint, the search service)
    resume_when: str = ""  # a backend's stop: what must change before `eval resume` can finish the run


@contextmanager
def _signal_handling_kept(*signums: int) -> Iterator[None]:
    """The signals' handlers and the wakeup fd as they were before the block: asyncio, closing
    a signal receiver, resets them to Python's defaults (SIGTERM's kills the process silently)
    and to none, which would drop the caller's (the CLI's, which reports an interrupt after the
    episodes too). Raises ValueError off the main thread, where none may be set."""
    handlers = {signum: signal.getsignal(signum) for signum in signums}
    wakeup = signal.set_wakeup_fd(-1)  # reading it takes setting it: put back at once
    signal.set_wakeup_fd(wakeup)
    try:
        yield
    finally:
        signal.set_wakeup_fd(wakeup)
        for signum, handler in handlers.items():
            if handler is not None:  # set outside Python: it cannot be put back
                signal.signal(signum, handler)


async def until_stopped(work: Callable[[], Awaitable[None]]) -> Stop | None:
    """Run `work` (the run's episodes); None when it ends by itself. A `BackendOutage`
    raised in it, or SIGINT/SIGTERM, cancels it and says why: the episodes in flight stay
    unfinished (never `error`) and the caller's writer, still open, commits every event
    already emitted, so an answered call is never lost or paid for again."""
    stop: Stop | None = None

    async def watch_signals(scope: anyio.CancelScope) -> None:
        nonlocal stop
        try:
            with _signal_handling_kept(signal.SIGINT, signal.SIGTERM), anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for signum in signals:
                    stop = Stop(f"interrupted by {signal.Signals(signum).name}", True)
                    scope.cancel()
                    return
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread: no handlers
            await anyio.sleep_forever()

    async def run(scope: anyio.CancelScope) -> None:
        nonlocal stop
        try:
            await work()
        except* BackendOutage as group:
            outage = outage_in(group)
            stop = Stop(str(outage), False, outage.resume_when)
        scope.cancel()

    async with anyio.create_task_group() as group:
        group.start_soon(watch_signals, group.cancel_scope)
        group.start_soon(run, group.cancel_scope)
    return stop
