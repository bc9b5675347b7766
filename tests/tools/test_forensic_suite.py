"""`compare` as a forensic analyst: benign copies are the same, unedited picture; real
local edits are found where they are. Pictures and changes come from `forensic_suite`
(seeded); these tests use its held-out seeds only (8000-8399; the thresholds were chosen
on the tuning seeds 1000-1399 and 5000-5399, the latter the first held-out split, whose
misses were read). `bench/forensic_suite.py` runs the larger version on both splits."""

from __future__ import annotations

import numpy as np
import pytest
from forensic_suite import (BENIGN, EDIT_KINDS, HELD_OUT_SEEDS, TUNING_SEEDS, Sample, benign_case, benign_plans, edit_case,
                            iou, jpeg, mirror, photo, predicted_mask, rotate, splice)

from eviscene.tools import compare, prepare

BENIGN_PICTURES = 16
BENIGN_PAIRS = 3  # random pairs of transforms per picture, besides each transform alone
EDIT_PICTURES = 8
EDIT_AREAS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3)


def no_printed_text_in_reference(crop: np.ndarray) -> bool:
    """The suite's references carry no printed text, so every OCR'd line on a benign copy
    is a caption laid over it (what `has_text` reports on these crops, without its cost)."""
    return False


def test_the_splits_share_no_picture():
    assert not set(TUNING_SEEDS) & set(HELD_OUT_SEEDS)


def test_benign_copies_are_the_same_unedited_picture():
    wrong = []
    total = 0
    for seed in list(HELD_OUT_SEEDS)[:BENIGN_PICTURES]:
        for plan in benign_plans(np.random.default_rng(seed), BENIGN_PAIRS):
            reference, copy = benign_case(seed, plan)
            result = compare(reference, prepare(copy.image, text_boxes=copy.boxes), reference_has_text=no_printed_text_in_reference)
            total += 1
            if not result.match or result.edited:
                wrong.append((seed, copy.steps, result.similarity, [r.model_dump() for r in result.regions][:2]))
    assert total == BENIGN_PICTURES * (len(BENIGN) + BENIGN_PAIRS)
    assert len(wrong) <= 0.02 * total, wrong


def test_real_edits_are_found_where_they_are():
    missed = []
    total = 0
    for index, seed in enumerate(list(HELD_OUT_SEEDS)[:EDIT_PICTURES]):
        for kind_index, kind in enumerate(EDIT_KINDS):
            case = edit_case(seed, kind, EDIT_AREAS[(index + kind_index) % len(EDIT_AREAS)])
            query = prepare(case.query.image, text_boxes=case.query.boxes)
            result = compare(case.reference, query)
            overlap = iou(predicted_mask(result, query, case.query.mask.shape), case.query.mask)
            total += 1
            if not (result.match and result.edited and overlap >= 0.5):
                missed.append((seed, kind, case.area, case.query.steps, result.match, result.edited, round(overlap, 3)))
    assert len(missed) <= 0.1 * total, missed


@pytest.fixture(scope="module")
def base():
    return photo(HELD_OUT_SEEDS[0])


def test_a_mirrored_copy_matches_and_says_so(base):
    flipped = mirror(Sample(base, np.zeros((base.height, base.width), bool)), np.random.default_rng(0)).image
    result = compare(jpeg(base, 90), jpeg(flipped, 80))
    assert result.match and result.mirrored and not result.edited


def test_an_edit_on_a_mirrored_copy_is_placed_on_the_copy_as_it_is(base):
    edited, mask = splice(base, np.random.default_rng(3), 0.05)
    flipped = edited.transpose(0)  # FLIP_LEFT_RIGHT
    truth = mask[:, ::-1]
    query = prepare(jpeg(flipped, 85))
    result = compare(jpeg(base, 90), query)
    assert result.match and result.mirrored and result.edited
    assert iou(predicted_mask(result, query, truth.shape), truth) >= 0.5


def test_a_copy_turned_by_two_degrees_is_not_edited(base):
    turned = rotate(Sample(base, np.zeros((base.height, base.width), bool)), np.random.default_rng(1))
    result = compare(jpeg(base, 90), jpeg(turned.image, 85))
    assert result.match and not result.edited
    assert not result.mirrored
