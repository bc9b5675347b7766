"""Seed 002's dataset split defaults, stated once: the export's options, its command-line
flags and the SQL default row of `export_settings` (via the registered function
`dataset_default(name)`) all read them from here."""

from __future__ import annotations

SPLIT_SEED = "ifv-policy-v1"
TRAIN_RATIO = 0.8
VALIDATION_RATIO = 0.1
SHORT_TRAJECTORY_MAX_TOKENS = 131072

DEFAULTS: dict[str, str] = {
    "seed": SPLIT_SEED,
    "train_ratio": repr(TRAIN_RATIO),
    "validation_ratio": repr(VALIDATION_RATIO),
    "short_max_tokens": str(SHORT_TRAJECTORY_MAX_TOKENS),
}


def dataset_default(name: str) -> str:
    """The default named `name` as SQL text (the caller casts it), e.g. `train_ratio` -> `0.8`."""
    return DEFAULTS[name]
