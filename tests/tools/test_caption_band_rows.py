"""A caption band laid over the picture in about the colour of what lies under it: the
band barely shifts grey levels there, so only its caption tells where it is. The
difference it leaves beside the letters is `caption_rows`, not an edit; a pasted object
away from the caption still is one, and so is one within a watermark's rows, which no band
explains. Pictures from the forensic suite's tuning seeds."""

from __future__ import annotations

import numpy as np
import pytest
from forensic_suite import TUNING_SEEDS, benign_case, jpeg, photo, pick_font, splice
from PIL import Image, ImageDraw

from eviscene.tools import compare, prepare

CAPTION = "Fire breaks out on cargo ship, 8 November 2023"


def banded(picture: Image.Image) -> tuple[Image.Image, list]:
    """`picture` with a 65%-opaque band over its bottom fifth, of the mean colour there, and a caption on it."""
    w, h = picture.size
    top = int(h * 0.8)
    under = np.asarray(picture)[top:].reshape(-1, 3).mean(axis=0)
    overlay = Image.new("RGBA", picture.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    draw.rectangle([0, top, w, h], fill=tuple(int(v) for v in under) + (166,))
    typeface = pick_font(np.random.default_rng(0), 22)
    left, upper, right, lower = draw.textbbox((12, top + 12), CAPTION, font=typeface)
    draw.text((12, top + 12), CAPTION, font=typeface, fill=(250, 250, 250, 255))
    box = [[left, upper], [right, upper], [right, lower], [left, lower]]
    return Image.alpha_composite(picture.convert("RGBA"), overlay).convert("RGB"), [box]


def no_printed_text_in_reference(crop: np.ndarray) -> bool:
    return False  # the suite's pictures carry no printed text


def test_a_band_the_colour_of_the_picture_under_it_is_not_an_edit():
    for seed in TUNING_SEEDS[:6]:
        reference = photo(seed)
        query, boxes = banded(reference)
        result = compare(jpeg(reference, 90), prepare(jpeg(query, 80), text_boxes=boxes), reference_has_text=no_printed_text_in_reference)
        assert result.match and not result.edited, (seed, result.regions)
        assert all(region.kind == "caption_rows" and region.y0 >= 0.75 for region in result.regions), (seed, result.regions)


def test_an_edit_above_the_caption_is_still_found():
    for seed in TUNING_SEEDS[:6]:
        reference = photo(seed)
        edited, mask = splice(reference, np.random.default_rng([seed, 1]), 0.05)
        if mask[int(mask.shape[0] * 0.7):].any():
            continue  # the object reaches into the band's rows: not what this test is about
        query, boxes = banded(edited)
        result = compare(jpeg(reference, 90), prepare(jpeg(query, 80), text_boxes=boxes), reference_has_text=no_printed_text_in_reference)
        assert result.edited and any(region.kind == "content" for region in result.regions), (seed, result.regions)


def test_an_object_beside_a_watermark_in_its_rows_is_an_edit():
    # An orange ellipse (a lion) 64 x 30 px at x 60-124, centred on the rows of a watermark
    # word printed at x 150: the watermark's rows take in the ellipse, but no band maps the
    # picture under it onto an ellipse, so it is an edit there (compare v7).
    for seed in TUNING_SEEDS[:4]:
        reference = photo(seed)
        w, h = reference.size
        edited = reference.copy()
        draw = ImageDraw.Draw(edited)
        top = int(h * 0.4)
        draw.ellipse([60, top, 124, top + 30], fill=(214, 150, 60))
        overlay = Image.new("RGBA", edited.size, (0, 0, 0, 0))
        typeface = pick_font(np.random.default_rng(0), 22)
        left, upper, right, lower = ImageDraw.Draw(overlay).textbbox((150, top + 4), "EXCLUSIVE", font=typeface)
        ImageDraw.Draw(overlay).text((150, top + 4), "EXCLUSIVE", font=typeface, fill=(255, 255, 255, 150))
        query = Image.alpha_composite(edited.convert("RGBA"), overlay).convert("RGB")
        boxes = [[[left, upper], [right, upper], [right, lower], [left, lower]]]
        result = compare(jpeg(reference, 90), prepare(jpeg(query, 80), text_boxes=boxes), reference_has_text=no_printed_text_in_reference)
        assert result.match and result.edited, (seed, result.regions)
        found = [region for region in result.regions if region.kind == "content"]
        assert found[0].x0 == pytest.approx(60 / w, abs=0.02) and found[0].x1 == pytest.approx(125 / w, abs=0.02), (seed, found)
        assert found[0].y0 == pytest.approx(top / h, abs=0.02) and found[0].y1 == pytest.approx((top + 31) / h, abs=0.02), (seed, found)


def test_a_plates_rim_beyond_its_caption_is_not_an_edit():
    # Tuning picture 1017 with "Shared 2.4K times" on a semi-opaque plate over buildings and
    # grass: the plate shows a few pixels beyond the OCR box, regions of 0.3-1 % lying wholly
    # within CAPTION_RIM of the text (no band maps the varied picture under it onto them).
    for plan in (("text_overlay",), ("mirror", "text_overlay")):
        reference, copy = benign_case(1017, plan)
        result = compare(prepare(reference, find_bands=False), prepare(copy.image, text_boxes=copy.boxes),
                         reference_has_text=no_printed_text_in_reference)
        assert result.match and not result.edited, (plan, result.regions)
