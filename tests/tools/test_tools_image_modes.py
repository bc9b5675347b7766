"""Pictures as a viewer shows them: a 16-bit greyscale scan, a caption on a transparent
ground, a JPEG without its last bytes; bytes that are no picture are named by file, the
same way every run; a mirrored copy is said to be one."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageOps
from tools_images import font, scene

from eviscene.release.case_image import CheckedImageStream
from eviscene.tools import read_text
from eviscene.tools.image_compare import compare
from eviscene.tools.images import UndecodableImage, open_image
from eviscene.tools.render import comparison_detail, comparison_summary

CAPTION = "Flooded streets in Springfield"


def words(text: str) -> list[str]:
    return "".join(c if c.isalnum() else " " for c in text.lower()).split()


def caption(ground: int = 235, ink: int = 20) -> Image.Image:
    image = Image.new("L", (640, 120), ground)
    ImageDraw.Draw(image).text((20, 40), CAPTION, fill=ink, font=font(32))
    return image


def test_a_16_bit_greyscale_scan_is_read_as_its_8_bits(tmp_path):
    """Pillow's convert clips 16-bit values to 255: the scan was read as a white page (no
    text, a flat hash) and the verdict went wrong without an error."""
    path = tmp_path / "scan.png"
    Image.fromarray(np.asarray(caption(), np.uint16) * 257).save(path)
    assert Image.open(path).mode.startswith("I")
    decoded, _ = open_image(path)
    assert np.asarray(decoded)[5, 5].tolist() == [235, 235, 235]
    assert words(read_text(path).text) == words(CAPTION)


def test_a_caption_on_a_transparent_ground_is_read_over_white(tmp_path):
    """Under the transparent pixels lies black: dropped, the alpha left black text on black."""
    ink = caption(ground=255, ink=0)
    rgba = Image.new("RGBA", ink.size, (0, 0, 0, 0))
    rgba.putalpha(ImageOps.invert(ink))  # opaque where the text is, transparent elsewhere
    path = tmp_path / "caption.png"
    rgba.save(path)
    assert np.asarray(open_image(path)[0])[5, 5].tolist() == [255, 255, 255]
    assert words(read_text(path).text) == words(CAPTION)


def test_a_jpeg_without_its_end_marker_decodes_as_far_as_it_goes():
    data = io.BytesIO()
    scene(3).save(data, "JPEG", quality=90)
    decoded, size = open_image(io.BytesIO(data.getvalue()[:-2]))
    assert size == (640, 426) and decoded.size == (512, 341)


@pytest.mark.parametrize("data", [b"", b"\x00\x00\x00\x18ftypheic" + b"junk" * 8], ids=["empty", "not-a-picture"])
def test_bytes_that_are_no_picture_are_named_by_file(data):
    """Pillow named the stream by its repr, an address that differed every run (one error
    counted as two causes; run_results.jsonl not the same twice)."""
    with pytest.raises(UndecodableImage) as refused:
        open_image(CheckedImageStream(data, "runtime_input/images/x.jpg", "0" * 64))
    assert str(refused.value) == "runtime_input/images/x.jpg: not a picture Pillow can read"


def test_a_mirrored_copy_is_said_to_be_one():
    """compare found the flip (`mirrored`) and the observation the model reads said only
    "Same picture: yes … no local differences"."""
    reference = scene(5)
    comparison = compare(reference, ImageOps.mirror(reference))
    assert comparison.match and comparison.mirrored
    assert "Mirrored: the case image is the reference flipped left to right." in comparison_detail(comparison)
    assert comparison_summary(comparison) == f"Same picture (similarity {comparison.similarity:.2f}), flipped left to right."
