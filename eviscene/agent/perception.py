"""The perception step: what the image shows before any tool runs. The embedded backend
reads the printed text (OCR) and hashes the picture; reports are cached by (image sha256,
backend version), in-process and from earlier runs in the log."""

from __future__ import annotations

import time

import anyio
import imagehash

from eviscene.events import PerceptionReported
from eviscene.release.case_image import CaseImage
from eviscene.tools.images import open_image
from eviscene.tools.ocr import OCR_DECODE_SIDE, aread_text

PERCEPTION_BACKEND = "embedded-rapidocr-phash-v1"


def _phash(case_image: CaseImage) -> str:
    # Decoded within bounds (a picture this large is reduced first; smaller ones unchanged).
    image, _ = open_image(case_image.open(), max_side=OCR_DECODE_SIDE)
    return str(imagehash.phash(image))


class EmbeddedPerception:
    """Callable perception step; one instance per run, shared by its episodes."""

    def __init__(self, cached: dict[str, PerceptionReported] | None = None, *, enabled: bool = True):
        self.enabled = enabled
        self._reports: dict[str, PerceptionReported] = dict(cached or {}) if enabled else {}
        self._locks: dict[str, anyio.Lock] = {}

    async def __call__(self, case_image: CaseImage, call_model: object = None) -> PerceptionReported:
        """The report of one image, from its checked bytes (so it is cached under the hash of
        what was read); `call_model` is unused (the embedded step calls no model). An episode
        past its timeout leaves at its deadline: the threads reading the picture give up or run
        on into the OCR cache alone (`aread_text`), and no report is kept for it or for the log."""
        lock = self._locks.setdefault(case_image.sha256, anyio.Lock())
        async with lock:  # rollouts of one case wait for the first OCR instead of repeating it
            cached = self._reports.get(case_image.sha256)
            if cached is not None:
                return cached.model_copy(update={"cache_hit": True, "latency_ms": 0.0})
            clock = time.monotonic()
            ocr = await aread_text(case_image)
            phash = await anyio.to_thread.run_sync(_phash, case_image, abandon_on_cancel=True)
            report = PerceptionReported(
                backend=PERCEPTION_BACKEND,
                ocr_text=ocr.text,
                ocr_lines=[line.model_dump() for line in ocr.lines],
                image_phash=phash,
                report={"width": ocr.width, "height": ocr.height},
                latency_ms=round((time.monotonic() - clock) * 1000, 3),
            )
            if self.enabled:
                self._reports[case_image.sha256] = report
            return report
