import time

import numpy as np
import pytest
from PIL import Image, ImageDraw
from tools_images import caption_banner, font, scene

from eviscene.tools import OcrLine, aread_text, read_text
from eviscene.tools.ocr import _assemble, cached_text, group_rows


def words(text: str) -> list[str]:
    return "".join(c if c.isalnum() else " " for c in text.lower()).split()


def test_reads_a_drawn_caption_in_reading_order(tmp_path):
    image = Image.new("RGB", (640, 160), "white")
    draw = ImageDraw.Draw(image)
    draw.text((20, 20), "Flooded streets in Springfield", fill="black", font=font(24))
    draw.text((20, 90), "March 12, 2021", fill="black", font=font(24))
    path = tmp_path / "caption.png"
    image.save(path)
    result = read_text(path)
    assert words(result.text) == words("Flooded streets in Springfield\nMarch 12, 2021")
    assert result.text.count("\n") == 1
    assert (result.width, result.height) == (640, 160)
    first = result.lines[0]
    assert first.confidence > 0.8
    assert min(y for _, y in first.box) < 60 and len(first.box) == 4


def test_reads_the_caption_banner_of_a_news_picture(tmp_path):
    path = tmp_path / "post.jpg"
    caption_banner(scene(3), "Crowds gather outside the stadium").save(path, quality=90)
    assert "crowds gather outside the stadium" in " ".join(words(read_text(path).text))


@pytest.mark.anyio
async def test_async_read_is_cached_by_content(tmp_path, anyio_backend):
    image = Image.new("RGB", (400, 80), "white")
    ImageDraw.Draw(image).text((10, 20), "Harbor fire 2015", fill="black", font=font(24))
    first, second = tmp_path / "a.png", tmp_path / "b.png"
    image.save(first)
    image.save(second)  # same bytes, another path
    result = await aread_text(first)
    assert words(result.text) == ["harbor", "fire", "2015"]
    assert cached_text(second) == result
    started = time.perf_counter()
    assert read_text(second) == result
    assert time.perf_counter() - started < 0.05


def test_a_caption_strip_longer_than_the_read_aspect_is_read_where_it_is(tmp_path):
    """A strip 12 times longer than high is read padded past its bottom edge: its words, in
    its own pixels."""
    image = Image.new("RGB", (1200, 100), "white")
    ImageDraw.Draw(image).text((20, 30), "Flooded streets in Springfield", fill="black", font=font(32))
    path = tmp_path / "strip.png"
    image.save(path)
    result = read_text(path)
    assert words(result.text) == words("Flooded streets in Springfield")
    assert (result.width, result.height) == (1200, 100)
    assert all(0 <= y <= 100 for line in result.lines for _, y in line.box)


@pytest.mark.parametrize(("size", "handed"), [((20000, 1), (1280, 640)), ((1, 300), (150, 300)), ((5000, 10), (1280, 640)),
                                             ((640, 320), (640, 320)), ((1200, 100), (1200, 600))])
def test_the_engine_is_handed_at_most_two_to_one(tmp_path, monkeypatch, size, handed):
    """What RapidOCR is handed: a picture past 2:1 padded to it (after the reduction of its
    long side to 1280), one within it as it is. Its detector then sees at most 1472 x 736."""
    from eviscene.tools import ocr

    engine, seen = ocr._get_engine(), []

    def spy(image, **kwargs):
        seen.append(image.size)
        return engine(image, **kwargs)

    monkeypatch.setattr(ocr, "_get_engine", lambda: spy)
    path = tmp_path / f"{size[0]}x{size[1]}.png"
    Image.new("RGB", size, (40, 90, 160)).save(path)
    assert read_text(path).lines == [] and seen == [handed]


def test_blank_image_reads_nothing(tmp_path):
    path = tmp_path / "blank.png"
    Image.new("RGB", (200, 100), "white").save(path)
    result = read_text(path)
    assert result.lines == [] and result.text == ""


def test_a_box_far_wider_than_its_text_is_texture_not_a_line():
    """The detector boxed a row of pines over a lake (730 x 168 px, turned a little) and
    read one character in it: over four line heights per character, where printed text
    takes under one. A line of the same character in a square box stays, as does a
    caption whose 19 characters fill 170 x 23 px."""
    grey = np.full((630, 800), 128, np.uint8)
    raw = [
        ([[55, 238], [783, 288], [771, 456], [43, 406]], "特", 0.91),
        ([[9, 10], [179, 10], [179, 33], [9, 33]], "9:41 photos.example", 0.99),
        ([[300, 500], [330, 500], [330, 530], [300, 530]], "特", 0.90),
    ]
    assert [line.text for line in _assemble(raw, grey).lines] == ["9:41 photos.example", "特"]


def line(text, x0, y0, x1, y1):
    return OcrLine(text=text, confidence=0.9, box=[[x0, y0], [x1, y0], [x1, y1], [x0, y1]])


def test_rows_group_top_to_bottom_then_left_to_right():
    lines = [line("world", 120, 12, 200, 38), line("below", 10, 60, 80, 90), line("hello", 10, 10, 100, 40)]
    rows = group_rows(lines)
    assert [[ln.text for ln in row] for row in rows] == [["hello", "world"], ["below"]]
