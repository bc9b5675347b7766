"""Images are decoded within bounds. A 13000x13000 PNG (about 520 KB on disk, 507 MB of
pixels) goes through one episode's image work (perception's OCR and hash, then matching's
`prepare`) in a real child process with a peak resident size well under 1.5 GiB; the
`eviscene` program prints no raw `DecompressionBombWarning` for it (a library caller keeps
Pillow's settings, warning included); a picture above the decoding limit is one clear error
for its episode."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from PIL import Image

from eviscene.release import sha256_file
from eviscene.tools.images import MAX_DECODE_PIXELS, ImageTooLarge, open_image

BUNDLED = Path(__file__).resolve().parents[2] / "examples" / "eviscene-demo-v1"
EVISCENE = str(Path(sys.executable).with_name("eviscene"))
GIB = 1024**3


def write_png(path: Path, width: int, height: int, color: bytes, banner: bytes, banner_from: int) -> Path:
    """A PNG streamed row by row (never whole in memory): `color` rows, then `banner` rows
    from row `banner_from` on (a caption strip). `color` is 1 byte (grey), 3 (RGB) or 4 (RGBA)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    colour_type = {1: 0, 3: 2, 4: 6}[len(color)]
    compressor, body = zlib.compressobj(6), bytearray()
    plain, strip = b"\x00" + color * width, b"\x00" + banner * width
    for row in range(height):
        body += compressor.compress(strip if row >= banner_from else plain)
    body += compressor.flush()
    header = struct.pack(">IIBBBBB", width, height, 8, colour_type, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", bytes(body)) + chunk(b"IEND", b""))
    return path


# The peak is VmHWM, this process's own high-water mark. Not ru_maxrss: Linux carries that
# across exec from the forking parent, so under a large pytest process it read the parent's size.
EPISODE_IMAGE_WORK = """
import json, re, sys, time
from pathlib import Path
import anyio
from eviscene.agent.perception import EmbeddedPerception
from eviscene.release import CaseImage
from eviscene.tools.images import prepare
clock = time.perf_counter()
case_image = CaseImage.of_file(Path(sys.argv[1]))  # read once, as an episode reads it
report = anyio.run(EmbeddedPerception(), case_image)
prepared = prepare(case_image.open())
print(json.dumps({"size": report.report, "prepared": list(prepared.size), "shape": list(prepared.rgb.shape),
                  "trimmed": prepared.trimmed, "seconds": time.perf_counter() - clock,
                  "peak_bytes": int(re.search(r"VmHWM:\\s+(\\d+) kB", Path("/proc/self/status").read_text()).group(1)) * 1024}))
"""


@pytest.mark.parametrize(("color", "banner"), [(b"\x28\x5a\xa0", b"\xff\xff\xff"), (b"\x28\x5a\xa0\xff", b"\xff\xff\xff\xff")],
                         ids=["rgb", "rgba"])
def test_a_13000_pixel_png_costs_well_under_1_5_gib(tmp_path, color, banner):
    """With transparency too: Pillow reduced an RGBA picture through a premultiplied copy of it
    whole, a second decoded copy (1.4 GB at its peak)."""
    image = write_png(tmp_path / "huge.png", 13000, 13000, color, banner, banner_from=11700)
    assert image.stat().st_size < 2_000_000
    done = subprocess.run([sys.executable, "-c", EPISODE_IMAGE_WORK, str(image)],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["size"] == {"width": 13000, "height": 13000} and result["prepared"] == [13000, 13000]
    assert max(result["shape"][:2]) <= 512
    # The white strip, found on the 512-pixel copy, in original pixels (to one row of that copy).
    assert set(result["trimmed"]) == {"bottom"} and abs(result["trimmed"]["bottom"] - 1300) <= 13000 / 512
    assert result["peak_bytes"] < 1 * GIB, result  # 507 (676) MB of pixels decoded once, reduced in place (in strips)
    print(f"13000x13000 PNG: peak {result['peak_bytes'] / GIB:.2f} GiB, {result['seconds']:.1f} s")


def _image_work(image: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", EPISODE_IMAGE_WORK, str(image)], capture_output=True, text=True, timeout=600,
                          cwd=image.parent, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def panorama_peak(tmp_path_factory) -> int:
    """What one episode's image work costs on a 2560 x 1280 panorama photo: the OCR engine
    and its models, and a detector input of 1472 x 736."""
    return _image_work(write_png(tmp_path_factory.mktemp("panorama") / "panorama.png", 2560, 1280, b"\x28\x5a\xa0",
                                 b"\xff\xff\xff", banner_from=1100))["peak_bytes"]


@pytest.mark.parametrize(("width", "height"), [(20000, 1), (1, 300), (800, 1), (5000, 10)])
def test_a_picture_a_pixel_or_a_few_thin_costs_what_a_panorama_costs(tmp_path, width, height, panorama_peak):
    """RapidOCR scales a picture up until its short side is 30 px, then its detector until it is
    736: a 20000 x 1 strip (80 bytes on disk) asked for a 9600 x 38400 array (4 GiB), and a run
    over it was killed for memory. Read padded to 2:1, its detector input is at most a 2:1
    panorama's, and so is its cost, give or take what one process's peak varies by from run to
    run (tens of MB here; more on other machines). The bound is that panorama measured on the
    machine running the test, not a figure."""
    result = _image_work(write_png(tmp_path / "strip.png", width, height, b"\x28\x5a\xa0", b"\xff\xff\xff", banner_from=height))
    assert result["size"] == {"width": width, "height": height} and result["prepared"] == [width, height]
    assert result["peak_bytes"] < panorama_peak + 256 * 1024**2, (result, panorama_peak)


def test_a_picture_above_the_decoding_limit_is_a_clear_error(tmp_path):
    """Pillow's own refusal (its default limit is this one) is met first, and said in the same words."""
    side = int(MAX_DECODE_PIXELS**0.5) + 1
    image = write_png(tmp_path / "bomb.png", side, side, b"\x80", b"\x80", banner_from=side)
    with pytest.raises(ImageTooLarge, match=r"bomb.png: image is 178,970,884 pixels, above the decoding limit of 178,956,970 pixels$"):
        open_image(image)


def test_a_picture_above_the_decoding_limit_is_refused_where_the_caller_lifted_pillow_s(tmp_path, monkeypatch):
    side = int(MAX_DECODE_PIXELS**0.5) + 1
    image = write_png(tmp_path / "bomb.png", side, side, b"\x80", b"\x80", banner_from=side)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", None)
    with pytest.raises(ImageTooLarge, match=rf"bomb.png: image is {side}x{side} pixels, above the decoding limit of 178,956,970 pixels$"):
        open_image(image)


def test_a_case_picture_above_the_limit_or_not_a_picture_is_refused_before_the_run(tmp_path):
    """It was found by each rollout's episode, as an engineering error: now from its header, before any."""
    release = tmp_path / "release"
    shutil.copytree(BUNDLED, release)
    cases = release / "runtime_input" / "cases.jsonl"
    rows = [json.loads(line) for line in cases.read_text(encoding="utf-8").splitlines() if line.strip()]
    image = release / rows[0]["image_path"]

    def refusal_of_a_run_over(picture: Path) -> tuple[int, str]:
        rows[0]["image_sha256"] = sha256_file(picture)
        cases.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        done = subprocess.run([EVISCENE, "--db", str(tmp_path / "log.duckdb"), "eval", "run", "--benchmark", str(cases),
                               "--case-id", rows[0]["case_id"], "--no-progress", "--no-materialize"],
                              capture_output=True, text=True, timeout=600, cwd=tmp_path)
        # the row it comes from, by file and line (the first line of the cases file)
        return done.returncode, done.stderr.removeprefix(f"Error: 1 case picture(s) cannot be read: {cases}:1: case {rows[0]['case_id']!r}: ")

    write_png(image, 20000, 20000, b"\x80", b"\xff", banner_from=18000)
    too_large = f"{rows[0]['image_path']} is 400,000,000 pixels, above the decoding limit of 178,956,970 pixels: downscale it\n"
    assert refusal_of_a_run_over(image) == (2, too_large)
    image.write_bytes(b"GIF89 but no picture")
    assert refusal_of_a_run_over(image) == (2, f"{rows[0]['image_path']} is not a picture Pillow can read\n")
    # One byte off in a PNG's chunk name: Pillow raised UnicodeDecodeError, a traceback out of the run.
    write_png(image, 64, 64, b"\x80", b"\xff", banner_from=60)
    data = bytearray(image.read_bytes())
    data[8 + 25 + 4] = 0xFF
    image.write_bytes(bytes(data))
    assert refusal_of_a_run_over(image) == (2, f"{rows[0]['image_path']} is not a picture Pillow can read\n")
    # Its pixel data damaged past a sound header: read as a blank picture, an episode gave a verdict on it.
    write_png(image, 64, 64, b"\x80", b"\xff", banner_from=60)
    data = bytearray(image.read_bytes())
    data[60:70] = bytes(byte ^ 0xFF for byte in data[60:70])  # inside the IDAT chunk's deflate stream (it starts at byte 41)
    image.write_bytes(bytes(data))
    damaged = f"{rows[0]['image_path']} is damaged picture data Pillow cannot read (broken data stream when reading image file)\n"
    assert refusal_of_a_run_over(image) == (2, damaged)
    assert not (tmp_path / "log.duckdb").exists()


def test_the_program_decodes_a_picture_between_pillow_s_warning_and_refusal_sizes_without_a_warning(tmp_path):
    """A 13000 x 13000 case picture (169 million pixels, over the 89 million Pillow warns at) is
    decoded by the preflight; the run stops at the next case's damaged picture, one line."""
    release = tmp_path / "release"
    shutil.copytree(BUNDLED, release)
    cases = release / "runtime_input" / "cases.jsonl"
    rows = [json.loads(line) for line in cases.read_text(encoding="utf-8").splitlines() if line.strip()][:2]
    large, damaged = release / rows[0]["image_path"], release / rows[1]["image_path"]
    write_png(large, 13000, 13000, b"\x28\x5a\xa0", b"\xff\xff\xff", banner_from=11700)
    data = bytearray(write_png(damaged, 64, 64, b"\x80", b"\xff", banner_from=60).read_bytes())
    data[60:70] = bytes(byte ^ 0xFF for byte in data[60:70])
    damaged.write_bytes(bytes(data))
    for row, picture in zip(rows, (large, damaged)):
        row["image_sha256"] = sha256_file(picture)
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    done = subprocess.run([EVISCENE, "--db", str(tmp_path / "log.duckdb"), "eval", "run", "--benchmark", str(cases),
                           "--no-progress", "--no-materialize"], capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env={**os.environ, "PYTHONWARNINGS": "default"})
    assert (done.returncode, done.stderr) == (2, f"Error: 1 case picture(s) cannot be read: {cases}:2: case {rows[1]['case_id']!r}: "
                                                 f"{rows[1]['image_path']} is damaged picture data Pillow cannot read "
                                                 "(broken data stream when reading image file)\n")
