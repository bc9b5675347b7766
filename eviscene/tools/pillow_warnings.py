"""Pillow's warnings in a process that is EviScene's own (the `eviscene` program, a run's Ray
workers), never in a library caller's, whose Pillow settings stay its own. Light to import:
the program calls it before any command."""

from __future__ import annotations

import warnings


def quiet_decompression_bomb_warning() -> None:
    """Pillow warns of a picture over 89 million pixels (`DecompressionBombWarning`); the image
    tools decode such a picture within their own limit (`images.MAX_DECODE_PIXELS`, Pillow's
    refusal point), which refuses in one line what is past it, and the raw warning would break
    into a run's progress."""
    warnings.filterwarnings("ignore", message=r"Image size \(\d+ pixels\) exceeds limit", module=r"PIL\.Image")
