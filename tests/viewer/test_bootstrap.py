"""The dashboard's bootstrap intervals and majority baseline, against hand-computed values."""

from __future__ import annotations

import pytest

from eviscene.viewer.data import bootstrap_intervals, majority_baseline


def test_every_answer_right_or_wrong_gives_a_point_accuracy():
    right = [{"gold": label, "predicted": label} for label in ("a", "b", "b", "c")]
    # A resample of only b's (1/16) scores a and c 0 (no support): macro-F1 1/3; all right: 1.
    found = bootstrap_intervals(right, ["a", "b", "c"])
    assert found["accuracy"] == (1.0, 1.0)
    assert found["macro_f1"] == (pytest.approx(1 / 3), 1.0)
    wrong = [{"gold": "a", "predicted": "b"}, {"gold": "b", "predicted": None}]
    assert bootstrap_intervals(wrong, ["a", "b"]) == {"accuracy": (0.0, 0.0), "macro_f1": (0.0, 0.0)}


def test_two_cases_resampled_give_the_intervals_their_outcomes_allow():
    # Case 1 right (a), case 2 unanswered (b). A resample of two picks: both case 1 (1/4):
    # accuracy 1, F1 a 1 and b 0 (no support, no guess), macro 0.5; one of each (1/2):
    # accuracy 0.5, macro 0.5; both case 2 (1/4): accuracy 0, macro 0.
    scored = [{"gold": "a", "predicted": "a"}, {"gold": "b", "predicted": None}]
    assert bootstrap_intervals(scored, ["a", "b"]) == {"accuracy": (0.0, 1.0), "macro_f1": (0.0, 0.5)}


def test_the_majority_baseline_is_the_commonest_gold_label_first_by_name():
    scored = [{"gold": g, "predicted": None} for g in ("b", "a", "b", "a", "c")]
    assert majority_baseline(scored) == ("a", 0.4)
    assert majority_baseline([]) == (None, 0.0)
