"""Which cases a run takes, and how each expands into rollout episodes.

Seed semantics (`run_eval.py`: `_select_samples`, `_rollout_specs`, `_positive_int`; its
`_safe_trace_filename` is `eviscene.rules.traces`) are the contract: the same flags give the same cases, the same
prompt_group_id, episode_id and sampling_seed.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from typing import Any, Sequence

from eviscene.errors import SelectionError
from eviscene.release.loader import Case
from eviscene.rules.canonical import seed_canonical_json


def select_cases(
    cases: Sequence[Case],
    *,
    case_ids: Sequence[str] | None,
    limit: int | None,
    shard_count: int = 1,
    shard_index: int = 0,
) -> list[Case]:
    """Pick a run's cases, in this order:

    1. explicit ``case_ids`` (each stripped; non-empty, unique, present) replace the
       release order with the user's order; None or empty means every case;
    2. with ``shard_count > 1``, cases are sorted by case_id and shard ``shard_index``
       keeps positions ``i % shard_count == shard_index`` (so a sharded run is in sorted
       order, an unsharded one in the release's or the user's order);
    3. ``limit`` keeps the first N of what remains — per shard, not overall.
    """
    indexed: dict[str, Case] = {}
    for case in cases:
        case_id = str(case.case_id).strip()
        if not case_id:
            raise SelectionError("a release case has an empty case_id")
        if case_id in indexed:
            raise SelectionError(f"release contains duplicate case_id {case_id!r}")
        indexed[case_id] = case
    selected = list(cases)
    if case_ids:
        requested = [str(item).strip() for item in case_ids]
        if any(not item for item in requested):
            raise SelectionError("--case-id values must be non-empty")
        repeated = sorted(item for item, count in Counter(requested).items() if count > 1)
        if repeated:
            raise SelectionError("--case-id values must be unique; repeated: " + ", ".join(repeated))
        missing = [case_id for case_id in requested if case_id not in indexed]
        if missing:
            raise SelectionError("requested case_id values are absent from the release: " + ", ".join(missing))
        selected = [indexed[case_id] for case_id in requested]
    if _not_int(shard_count) or shard_count < 1:
        raise SelectionError(f"--shard-count must be an integer of at least 1, got {shard_count!r}")
    if _not_int(shard_index) or not 0 <= shard_index < shard_count:
        raise SelectionError(
            f"--shard-index must be an integer in [0, {shard_count}) for --shard-count {shard_count}, "
            f"got {shard_index!r}"
        )
    if shard_count > 1:
        ordered = sorted(selected, key=lambda case: str(case.case_id))
        selected = [case for index, case in enumerate(ordered) if index % shard_count == shard_index]
    if limit is not None:
        # The seed slices with any int; a negative limit would silently drop cases from
        # the end (samples[:-n]), so it is refused. 0 keeps the seed's empty selection.
        if _not_int(limit) or limit < 0:
            raise SelectionError(f"--limit must be a non-negative integer, got {limit!r}")
        selected = selected[:limit]
    return selected


def _not_int(value: Any) -> bool:
    return isinstance(value, bool) or not isinstance(value, int)


def positive_int(value: Any, name: str) -> int:
    """``int(value)``, which must be at least 1 (seed `_positive_int`).

    Unlike the seed, booleans and floats with a fractional part are refused instead of
    being read as 1/0 or truncated.
    """
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise SelectionError(f"{name} must be an integer, got {value!r}")
    try:
        parsed = int(value)
    except (TypeError, ValueError):
        raise SelectionError(f"{name} must be an integer, got {value!r}") from None
    if parsed < 1:
        raise SelectionError(f"{name} must be at least 1, got {parsed}")
    return parsed


@dataclass(frozen=True)
class RolloutSpec:
    """One episode to run: a case, its rollout group and its reproducible sampling seed."""

    case: Case
    case_id: str
    prompt_group_id: str
    episode_id: str
    rollout_index: int
    group_size: int
    sampling_seed: int


def prompt_group_id(
    case_id: str, *, policy_revision: str, model: str, base_sampling_seed: int, group_size: int
) -> str:
    """``pg-`` + the first 24 hex of sha256 over the group's canonical JSON (seed)."""
    material = {
        "case_id": case_id,
        "policy_revision": policy_revision,
        "model": model,
        "base_sampling_seed": base_sampling_seed,
        "group_size": group_size,
    }
    canonical = seed_canonical_json(material, ensure_ascii=False)
    return "pg-" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:24]


def sampling_seed(base_sampling_seed: int, case_id: str, rollout_index: int) -> int:
    """First 4 bytes of sha256(f"{base}:{case_id}:{index}"), big-endian, as a non-negative
    31-bit int (seed). Independent of model, policy revision and group size."""
    material = f"{base_sampling_seed}:{case_id}:{rollout_index}".encode("utf-8")
    return int.from_bytes(hashlib.sha256(material).digest()[:4], "big") & 0x7FFFFFFF


def rollout_specs(
    cases: Sequence[Case],
    *,
    rollouts_per_case: int,
    base_sampling_seed: int,
    policy_revision: str,
    model: str,
) -> list[RolloutSpec]:
    """Expand cases into isolated, reproducible rollout episodes, case-major (seed).

    With one rollout a case the episode_id is the case_id itself; with more it is
    ``{case_id[:150]}--{prompt_group_id[3:11]}--r{index:03d}``.
    """
    if _not_int(rollouts_per_case) or rollouts_per_case < 1:
        raise SelectionError(f"--rollouts-per-case must be an integer of at least 1, got {rollouts_per_case!r}")
    if _not_int(base_sampling_seed):
        raise SelectionError(f"--base-sampling-seed must be an integer, got {base_sampling_seed!r}")
    # The seed hashes str(model); a None here would hash as JSON null, not "None", and
    # silently change every prompt_group_id, so the caller must pass the strings.
    for name, value in (("policy_revision", policy_revision), ("model", model)):
        if not isinstance(value, str):
            raise SelectionError(f"{name} must be a string, got {value!r}")
    specs: list[RolloutSpec] = []
    for case in cases:
        case_id = str(case.case_id)
        group_id = prompt_group_id(
            case_id,
            policy_revision=policy_revision,
            model=model,
            base_sampling_seed=base_sampling_seed,
            group_size=rollouts_per_case,
        )
        for rollout_index in range(rollouts_per_case):
            episode_id = case_id
            if rollouts_per_case > 1:
                episode_id = f"{case_id[:150]}--{group_id[3:11]}--r{rollout_index:03d}"
            specs.append(
                RolloutSpec(
                    case=case,
                    case_id=case_id,
                    prompt_group_id=group_id,
                    episode_id=episode_id,
                    rollout_index=rollout_index,
                    group_size=rollouts_per_case,
                    sampling_seed=sampling_seed(base_sampling_seed, case_id, rollout_index),
                )
            )
    return specs

