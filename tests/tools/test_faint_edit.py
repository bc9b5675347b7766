"""A faint change under FAINT_REGION (4 %) of the picture is found when its colours are
common elsewhere in the picture and differ only here (compare v7); a re-toned copy whose
colour fit errs over a few percent of the picture, at colours rare elsewhere, stays
"same picture, not edited". Pictures from the forensic suite's tuning seeds."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from forensic_suite import TUNING_SEEDS, benign_case, jpeg, photo
from PIL import Image

from eviscene.tools import compare, prepare
from eviscene.tools.image_compare import FAINT_REGION, PIXEL_THRESHOLD


def shaded(picture: Image.Image) -> tuple[Image.Image, float]:
    """`picture` with an ellipse centred at (0.5, 0.15) of the width and height, half-axes
    0.12 and 0.08 of them (area π·0.12·0.08 ≈ 3.0 % of the picture), darkened by 18 grey
    levels (0.9 of the pixel threshold) with an edge feathered over 2 px, like a grey funnel
    over grey cloud. Returns the picture and the ellipse's exact share of it."""
    arr = np.asarray(picture, np.float32)
    h, w = arr.shape[:2]
    ellipse = np.zeros((h, w), np.float32)
    cv2.ellipse(ellipse, (w // 2, int(h * 0.15)), (int(w * 0.12), int(h * 0.08)), 0, 0, 360, 1.0, -1)
    darker = arr - 0.9 * PIXEL_THRESHOLD * cv2.GaussianBlur(ellipse, (0, 0), 2.0)[..., None]
    return Image.fromarray(np.clip(darker, 0, 255).astype(np.uint8)), float(ellipse.mean())


@pytest.mark.parametrize("seed", TUNING_SEEDS[:6])
def test_a_faint_change_of_three_percent_over_common_colours_is_found(seed):
    reference = photo(seed)
    query, share = shaded(reference)
    assert 0.029 <= share <= 0.031 < FAINT_REGION
    result = compare(jpeg(reference, 90), prepare(jpeg(query, 85)))
    assert result.match and result.edited, result.regions
    region = result.regions[0]
    assert region.kind == "content"
    assert region.area == pytest.approx(share, abs=0.003)
    # The ellipse's box: x 0.38-0.62, y 0.07-0.23 (the feathered edge adds about a pixel).
    assert (region.x0, region.x1) == (pytest.approx(0.38, abs=0.01), pytest.approx(0.62, abs=0.01))
    assert (region.y0, region.y1) == (pytest.approx(0.07, abs=0.01), pytest.approx(0.23, abs=0.01))


@pytest.mark.parametrize("seed, plan", [(1004, ("tone",)), (1009, ("crop", "tone"))])
def test_a_retoned_copy_whose_fit_errs_at_rare_colours_stays_clean(seed, plan):
    # The suite's two tuning copies whose colour fit leaves faint regions of 2 % or more
    # (3.65 % and 2.3 % of the picture at 1.7x and 2.7x FAINT_FACTOR of the threshold).
    reference, copy = benign_case(seed, plan)
    result = compare(prepare(reference, find_bands=False), prepare(copy.image, text_boxes=copy.boxes),
                     reference_has_text=lambda crop: False)
    assert result.match and not result.edited, result.regions
