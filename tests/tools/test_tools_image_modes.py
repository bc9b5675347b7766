"""Pictures as a viewer shows them: a 16-bit greyscale scan, a caption on a transparent
ground, a JPEG without its last bytes; bytes that are no picture are named by file, the
same way every run; a mirrored copy is said to be one."""

from __future__ import annotations

import io
import struct
import subprocess
import sys
import warnings
import zlib

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageOps
from tools_images import font, scene

from eviscene.release.case_image import CheckedImageStream
from eviscene.tools import read_text
from eviscene.tools.image_compare import compare
from eviscene.tools.images import UndecodableImage, _decoded, open_image
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


def test_a_16_bit_greyscale_scan_too_large_to_decode_whole_is_read_as_its_8_bits_too(tmp_path):
    """Above REDUCE_ABOVE_PIXELS a picture is shrunk in its own mode first: 16-bit greyscale,
    which cannot be, was converted to RGB there, clipped to 255 (a white page, no error)."""
    path = tmp_path / "scan.png"
    Image.fromarray(np.full((6400, 6400), 0x8080, np.uint16)).save(path, compress_level=1)
    assert Image.open(path).mode.startswith("I;16")
    decoded, size = open_image(path)
    assert size == (6400, 6400) and np.asarray(decoded)[5, 5].tolist() == [128, 128, 128]


def _png() -> bytes:
    out = io.BytesIO()
    scene(3).save(out, "PNG")
    return out.getvalue()


def _png_with_chunks(kind: bytes, data: bytes, count: int) -> bytes:
    """A small PNG with `count` more chunks after its pixels."""
    png = _png()
    chunk = struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return png[:-12] + chunk * count + png[-12:]  # IEND is the last 12 bytes


@pytest.mark.parametrize(("data", "said"), [
    # text chunks that inflate past Pillow's limit for them all (64 MB): ValueError as the pixels load
    (_png_with_chunks(b"zTXt", b"note\x00\x00" + zlib.compress(bytes(1_000_000)), 70), r"damaged picture data Pillow cannot read \(.+\)"),
    # the name of the chunk after IHDR (8 + 25 + 4 bytes in) no text: UnicodeDecodeError where Pillow
    # skipped its chunk-name check (`LOAD_TRUNCATED_IMAGES`); with it, a PNG Pillow does not recognise
    (_png()[:37] + b"\xff" + _png()[38:], r"not a picture Pillow can read"),
], ids=["text-bomb", "chunk-name"])
def test_a_png_whose_chunks_pillow_refuses_is_named_by_file(data, said):
    """What Pillow's PNG reader raises for a damaged chunk (ValueError, UnicodeDecodeError) was
    an engineering error naming no file, and stopped a run's preflight with a traceback."""
    with pytest.raises(UndecodableImage, match=rf"^runtime_input/images/x\.png: {said}$"):
        open_image(CheckedImageStream(data, "runtime_input/images/x.png", "0" * 64))


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


def _rows_with_content(image: Image.Image) -> int:
    return int((np.asarray(image.convert("L"), np.float32).std(axis=1) > 1).sum())


def test_a_progressive_jpeg_cut_in_half_shows_its_passes_so_far():
    """Its decoder draws nothing until it meets an end marker (what Pillow's process-wide
    `LOAD_TRUNCATED_IMAGES` adds): given one, every row of the picture shows."""
    data = io.BytesIO()
    scene(3).save(data, "JPEG", quality=90, progressive=True)
    decoded, _ = open_image(io.BytesIO(data.getvalue()[: len(data.getvalue()) // 2]))
    assert _rows_with_content(decoded) > 0.9 * decoded.height


def test_a_png_cut_in_half_shows_its_top_and_nothing_below():
    data = io.BytesIO()
    scene(3).save(data, "PNG")
    decoded, size = open_image(io.BytesIO(data.getvalue()[: len(data.getvalue()) // 2]))
    whole, _ = open_image(io.BytesIO(data.getvalue()))
    assert size == (640, 426)
    top, bottom = np.asarray(decoded)[:50], np.asarray(decoded)[-50:]
    assert np.array_equal(top, np.asarray(whole)[:50]) and _rows_with_content(Image.fromarray(bottom)) == 0


def test_a_cut_off_jpeg_is_decoded_at_the_scale_the_whole_file_is():
    """Given its end marker, the picture was drafted again at its reduced size, which Pillow's
    floor division read as a request for twice the scale: 251x188, not the whole file's 126x94."""
    rng = np.random.default_rng(7)
    data = io.BytesIO()
    Image.fromarray((rng.random((751, 1001, 3)) * 255).astype("uint8")).save(data, "JPEG")
    whole, _ = _decoded(io.BytesIO(data.getvalue()), 64)  # 1001 // 64 = 15, 751 // 64 = 11: a scale of 8
    cut, _ = _decoded(io.BytesIO(data.getvalue()[:-200]), 64)
    assert whole.size == cut.size == (126, 94)


@pytest.mark.parametrize("kind", ["PNG", "JPEG"])
def test_a_file_cut_off_before_any_of_its_picture_is_refused_not_read_as_a_blank_one(kind):
    """Its header alone decoded to a flat picture (all black, all grey), which an episode gave
    a verdict on, as on a damaged one."""
    data = io.BytesIO()
    scene(3).save(data, kind)
    content = data.getvalue()
    kept = content.find(b"IDAT") + 20 if kind == "PNG" else content.find(b"\xff\xda") + 14  # into the picture's data
    with pytest.raises(UndecodableImage, match=r"damaged picture data Pillow cannot read \(the file is cut off before any of its picture\)"):
        open_image(io.BytesIO(content[:kept]))


def test_a_png_whose_pixel_data_is_damaged_is_refused_not_read_as_a_blank_picture():
    """Bytes 200-400 turned: Pillow's `load` says `broken data stream`; read with Pillow's
    `LOAD_TRUNCATED_IMAGES` on, the picture came out blank (no text, hash 0000000000000000)
    and an episode gave a confident verdict on it."""
    data = io.BytesIO()
    scene(3).save(data, "PNG")
    damaged = bytearray(data.getvalue())
    damaged[200:400] = bytes(byte ^ 0xFF for byte in damaged[200:400])
    with pytest.raises(UndecodableImage) as refused:
        open_image(CheckedImageStream(bytes(damaged), "runtime_input/images/x.png", "0" * 64))
    assert str(refused.value) == ("runtime_input/images/x.png: damaged picture data Pillow cannot read "
                                  "(broken data stream when reading image file)")


PILLOW_SETTINGS = """
import io
from PIL import Image, ImageFile
import eviscene
eviscene.EvalOptions
from eviscene.tools.images import open_image
data = io.BytesIO()
Image.new("RGB", (64, 64), "red").save(data, "PNG")
open_image(io.BytesIO(data.getvalue()[:-30]))  # a picture cut short, decoded as far as it goes
try:
    Image.open(io.BytesIO(data.getvalue()[:-30])).load()
    print("user code read a cut-off picture")
except OSError as exc:
    print(exc)
print(Image.MAX_IMAGE_PIXELS, ImageFile.LOAD_TRUNCATED_IMAGES)
"""


def test_importing_eviscene_and_decoding_leave_pillow_s_settings_to_the_user():
    """`import eviscene` turned off Pillow's decompression-bomb check and its truncated-image
    error for every picture the user's own code opened in the same process."""
    done = subprocess.run([sys.executable, "-c", PILLOW_SETTINGS], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.splitlines() == ["image file is truncated", "89478485 False"]  # Pillow's defaults


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


@pytest.mark.parametrize("size", [(1, 600), (5, 600), (600, 3)], ids=["1-wide", "5-wide", "3-high"])
def test_a_picture_narrower_or_shorter_than_the_comparison_grid_compares_without_numpy_warnings(size):
    """Its grid (8 x 8 blocks) left blocks and segments empty: `Mean of empty slice` and `invalid
    value encountered in divide` went to the terminal of every run over it."""
    thin = Image.fromarray(np.random.default_rng(7).integers(0, 255, (size[1], size[0], 3), dtype=np.uint8))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compare(thin, thin)  # too little to match even itself: what it says is not at issue here
        assert not compare(thin, scene(3)).match
        assert not compare(scene(3), thin).match
