"""`separate_vlm` image access: a vision model describes the case image once, in the
`perception` stage, and the agent's model sees only the perception report that carries the
description, never the image.

`VlmPerception` wraps the run's perception step: the embedded report (OCR, perceptual hash)
plus the VLM's description under `report.description`, with the backend naming the VLM so
these reports never mix with plain embedded ones in the perception cache. Rollouts of one
image share one description (one VLM call per image and run), recorded as a `model.called`
event (stage `perception`) of the episode that made it, failed or not.
"""

from __future__ import annotations

import time
from typing import Awaitable, Callable

import anyio

from eviscene.agent.provider import CallModel, ImageStore, ModelRequest, ModelResponse, Provider
from eviscene.events import PerceptionReported
from eviscene.release.case_image import CaseImage
from eviscene.rules.circuit_breaker import acquire_off_the_clock

DESCRIBE_SYSTEM = "You describe images for a fact-checking team. Report only what is visible; do not judge the claim."
DESCRIBE_PROMPT = """Describe this image for a fact-checker who cannot see it:
- every piece of text printed on it, verbatim (captions, signs, watermarks, handles, dates);
- the scene: place, people, objects, weather, time of day, and anything that identifies an event;
- the kind of image (photo, screenshot, social-media post, illustration) and any visible sign of editing.
Plain text, at most 200 words."""

Perceive = Callable[..., Awaitable[PerceptionReported]]


def perception_seed(image_sha256: str) -> int:
    """One fixed sampling seed per image: its description is shared by every rollout."""
    return int(image_sha256[:8], 16) & 0x7FFFFFFF


async def describe_image(provider: Provider, image_url: str, *, sampling_seed: int, call_model: CallModel | None = None) -> ModelResponse:
    """Ask `provider` to describe one image (stage `perception`), through `call_model` when
    an episode records the call."""
    request = ModelRequest(
        stage="perception",
        messages=[
            {"role": "system", "content": DESCRIBE_SYSTEM},
            {"role": "user", "content": [{"type": "text", "text": DESCRIBE_PROMPT}, {"type": "image_url", "image_url": {"url": image_url}}]},
        ],
        sampling_seed=sampling_seed,
    )
    return await (call_model(provider, request) if call_model is not None else provider.complete(request))


class VlmPerception:
    """The run's perception step with a VLM description added; one per run."""

    def __init__(self, inner: Perceive, vlm: Provider, images: ImageStore):
        self.inner, self.vlm, self.images = inner, vlm, images
        self._reports: dict[str, PerceptionReported] = {}
        self._locks: dict[str, anyio.Lock] = {}

    async def __call__(self, case_image: CaseImage, call_model: CallModel | None = None) -> PerceptionReported:
        lock = self._locks.setdefault(case_image.sha256, anyio.Lock())
        await acquire_off_the_clock(lock)  # the rollout describing the image may wait for a down VLM
        try:
            cached = self._reports.get(case_image.sha256)
            if cached is not None:
                return cached.model_copy(update={"cache_hit": True, "latency_ms": 0.0})
            clock = time.monotonic()
            base = await self.inner(case_image)
            url = self.images.add(case_image.sha256, case_image.path)
            described = await describe_image(self.vlm, url, sampling_seed=perception_seed(case_image.sha256), call_model=call_model)
            report = base.model_copy(
                update={
                    "backend": f"{base.backend}+vlm:{self.vlm.name}/{self.vlm.model}",
                    "report": {**base.report, "description": described.content.strip()},
                    "cache_hit": False,
                    "latency_ms": round((time.monotonic() - clock) * 1000, 3),
                }
            )
            self._reports[case_image.sha256] = report
            return report
        finally:
            lock.release()
