"""A thin strip along the edge of the compared picture (what a copy's frame, shadow or
credit strip leaves where the trim stopped a pixel or two short; tuning variants 111, 113
and 114 of the bundled generator) is `frame_edge`, not an edit; the same strip inside the
picture still is one. Pictures from the forensic suite's tuning seeds."""

from __future__ import annotations

from forensic_suite import TUNING_SEEDS, jpeg, photo
from PIL import Image, ImageDraw

from eviscene.tools import compare


def with_strip(picture: Image.Image, x_share: float) -> Image.Image:
    """`picture` with a light strip 1.2 % of its width wide from x_share, over 2-56 % of its height."""
    out = picture.copy()
    w, h = out.size
    x = int(w * x_share)
    ImageDraw.Draw(out).rectangle([x, int(h * 0.02), x + int(w * 0.012), int(h * 0.56)], fill=(235, 235, 235))
    return out


def test_a_strip_at_the_edge_is_a_frame_residue_and_inside_an_edit():
    for seed in TUNING_SEEDS[:4]:
        reference = photo(seed)
        at_edge = compare(jpeg(reference, 90), jpeg(with_strip(reference, 0.975), 80))
        assert at_edge.match and not at_edge.edited, (seed, at_edge.regions)
        assert [region.kind for region in at_edge.regions] == ["frame_edge"], (seed, at_edge.regions)
        assert at_edge.regions[0].x1 >= 0.98 and at_edge.regions[0].y1 <= 0.6
        inside = compare(jpeg(reference, 90), jpeg(with_strip(reference, 0.5), 80))
        assert inside.match and inside.edited, (seed, inside.regions)
        assert [region.kind for region in inside.regions] == ["content"] and 0.48 <= inside.regions[0].x0 <= 0.5
