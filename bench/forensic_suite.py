"""`compare` on the seeded forensic suite (tests/tools/forensic_suite.py), larger than the
tests: the benign false-positive rate per transform, and the edit detection rate and
localisation (IoU with the truth mask) per edit kind (the blended kinds, `blend` and
`tint`, apart from the target's), on the tuning split (where the
thresholds were chosen) and on the held-out split (what the README reports).

Splits (`forensic_suite.TUNING_SEEDS` / `HELD_OUT_SEEDS`): seeds 1000-1399 and 5000-5399
tune, 8000-8399 hold out. 5000-5399 were the first held-out split; a threshold was lowered
after reading its misses, so they became tuning seeds and 8000-8399, never looked at while
thresholds were chosen, replaced them.

The baseline is decoding and trimming both pictures (`prepare`), timed in the same run:
the cost of a comparison is printed as a ratio to it.

    python bench/forensic_suite.py [--pictures 40] [--pairs 6] [--split held-out]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "tools"))

from forensic_suite import (BLENDED_KINDS, EDIT_KINDS, HELD_OUT_SEEDS, TUNING_SEEDS, benign_case, benign_plans, edit_case,  # noqa: E402
                            iou, predicted_mask)

from eviscene.tools import compare, prepare  # noqa: E402

EDIT_AREAS = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3)


def no_printed_text_in_reference(crop: np.ndarray) -> bool:
    return False  # the suite's references carry no printed text


def run(seeds: list[int], pairs: int) -> None:
    per_step: dict[str, list[bool]] = defaultdict(list)
    wrong_total = benign_total = 0
    compare_seconds = prepare_seconds = 0.0
    for seed in seeds:
        for plan in benign_plans(np.random.default_rng(seed), pairs):
            reference, copy = benign_case(seed, plan)
            started = time.perf_counter()
            prepared_ref, prepared_copy = prepare(reference, find_bands=False), prepare(copy.image, text_boxes=copy.boxes)
            prepare_seconds += time.perf_counter() - started
            started = time.perf_counter()
            result = compare(prepared_ref, prepared_copy, reference_has_text=no_printed_text_in_reference)
            compare_seconds += time.perf_counter() - started
            wrong = not result.match or result.edited
            for name in plan:
                per_step[name].append(wrong)
            per_step["alone" if len(plan) == 1 else "in pairs"].append(wrong)
            wrong_total += wrong
            benign_total += 1
    print(f"benign pairs {benign_total}: 'same picture, not edited' in {1 - wrong_total / benign_total:.3f} "
          f"(false-positive rate {wrong_total / benign_total:.3f})")
    for name, flags in sorted(per_step.items()):
        print(f"  {name:<14} {len(flags):>5} pairs   false-positive rate {sum(flags) / len(flags):.3f}")
    print(f"  compare: {compare_seconds / benign_total:.3f} s per pair, {compare_seconds / prepare_seconds:.2f}x the decode+trim baseline")

    by_kind: dict[str, list[tuple[bool, float]]] = defaultdict(list)
    by_area: dict[float, list[tuple[bool, float]]] = defaultdict(list)
    for index, seed in enumerate(seeds):
        for kind_index, kind in enumerate(EDIT_KINDS + BLENDED_KINDS):
            area = EDIT_AREAS[(index + kind_index) % len(EDIT_AREAS)]
            case = edit_case(seed, kind, area)
            query = prepare(case.query.image, text_boxes=case.query.boxes)
            result = compare(case.reference, query)
            outcome = (result.match and result.edited, iou(predicted_mask(result, query, case.query.mask.shape), case.query.mask))
            by_kind[kind].append(outcome)
            if kind in EDIT_KINDS:  # the target's kinds; the blended ones are printed by kind only
                by_area[area].append(outcome)
    counted = [o for area, outcomes in by_area.items() if area >= 0.01 for o in outcomes]
    print(f"edits with area >= 1%: {len(counted)}, detected {sum(d for d, _ in counted) / len(counted):.3f}, "
          f"located (IoU >= 0.5) {sum(d and i >= 0.5 for d, i in counted) / len(counted):.3f}, "
          f"median IoU when detected {np.median([i for d, i in counted if d] or [0.0]):.2f}")
    for label, groups in (("kind", by_kind), ("area", by_area)):
        for key, outcomes in sorted(groups.items()):
            print(f"  {label} {key!s:<13} {len(outcomes):>4} detected {sum(d for d, _ in outcomes) / len(outcomes):.3f}"
                  f"  located {sum(d and i >= 0.5 for d, i in outcomes) / len(outcomes):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pictures", type=int, default=40, help="base pictures per split")
    parser.add_argument("--pairs", type=int, default=6, help="random transform pairs per picture, besides each transform alone")
    parser.add_argument("--split", choices=("tuning", "held-out", "both"), default="both")
    args = parser.parse_args()
    for name, seeds in (("tuning", TUNING_SEEDS), ("held-out", HELD_OUT_SEEDS)):
        if args.split in (name, "both"):
            print(f"\n== {name} split ({args.pictures} pictures)")
            run(list(seeds)[:args.pictures], args.pairs)


if __name__ == "__main__":
    main()
