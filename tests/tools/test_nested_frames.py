"""Copies in nested frames, turned copies in a post, and faint large edits: trimmed, found
by reverse search, and located (expectations from how the pictures were drawn)."""

import numpy as np
import pytest
from tools_fixtures import CorpusBuilder
from PIL import Image, ImageDraw
from tools_images import font, jpeg, paste_object, scene

from eviscene.tools import Corpus, compare, find_content_box, prepare

CHROME, SIDE, TOP, BOTTOM, STRIP = (236, 236, 240), 16, 60, 40, 150


def screenshot_in_post(photo: Image.Image) -> Image.Image:
    """The photo in a screenshot's grey chrome (status bar above), that screenshot posted
    above a white strip with the account and the claim: two frames, one inside the other."""
    shot = Image.new("RGB", (photo.width + 2 * SIDE, photo.height + TOP + BOTTOM), CHROME)
    shot.paste(photo, (SIDE, TOP))
    ImageDraw.Draw(shot).text((20, 18), "9:41   photos.example   ...", fill=(60, 60, 60), font=font(20))
    post = Image.new("RGB", (shot.width, shot.height + STRIP), "white")
    post.paste(shot, (0, 0))
    draw = ImageDraw.Draw(post)
    draw.text((18, shot.height + 20), "@someone  ·  2h", fill=(100, 108, 116), font=font(18))
    draw.text((18, shot.height + 60), "Crowds gather downtown after the storm", fill=(20, 24, 28), font=font(24))
    return post


def test_both_frames_of_a_screenshot_in_a_post_are_trimmed():
    photo = scene(4)
    box, trimmed = find_content_box(np.asarray(jpeg(screenshot_in_post(photo), 80)))
    expected = (SIDE, TOP, SIDE + photo.width, TOP + photo.height)
    assert box == pytest.approx(expected, abs=2)
    assert trimmed["bottom"] == pytest.approx(BOTTOM + STRIP, abs=2)


def test_a_turned_photo_above_a_post_strip_is_trimmed_at_its_slanted_edge():
    photo = scene(4)
    turned = photo.rotate(1.5, resample=Image.Resampling.BICUBIC, fillcolor=(255, 255, 255))
    post = Image.new("RGB", (photo.width, photo.height + STRIP), "white")
    post.paste(turned, (0, 0))
    ImageDraw.Draw(post).text((18, photo.height + 50), "Crowds gather downtown after the storm", fill=(20, 24, 28), font=font(24))
    (_, top, _, bottom), _ = find_content_box(np.asarray(jpeg(post, 80)))
    # The turned edge dips up to width * tan(1.5 degrees) = 17 px into the photo's last rows.
    assert top == 0
    assert photo.height - 17 <= bottom <= photo.height + 1


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    builder = CorpusBuilder(tmp_path_factory.mktemp("corpus"))
    for seed in range(40, 50):
        builder.page(f"https://pics.example/{seed}", f"Scene {seed}", f"Picture number {seed}.",
                     images=[builder.image(f"s{seed}.jpg", scene(seed), alt=f"scene {seed}")])
    corpus = Corpus.load(builder.write())
    return corpus.image_index()


def test_reverse_search_finds_an_edited_copy_in_nested_frames(indexed):
    box = (0.55, 0.3, 0.68, 0.5)
    query = prepare(jpeg(screenshot_in_post(paste_object(scene(43), box)), 70))
    matches = [m for m in indexed.similar(query) if m.comparison.match]
    assert [e.page.url for m in matches for e in m.entries] == ["https://pics.example/43"]
    region = matches[0].comparison.regions[0]
    assert matches[0].comparison.edited
    assert (region.x0, region.y0, region.x1, region.y1) == pytest.approx(box, abs=0.03)


def box_iou(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    inter = max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def test_a_faint_large_edit_is_found_whole():
    """A grey shape laid at 42% over the picture (a funnel cloud, smoke): about 16 grey
    levels of difference at its median, under the pixel threshold, over 7.5% of the picture."""
    picture = scene(4)
    pixels = np.asarray(picture, float).copy()
    h, w = pixels.shape[:2]
    ys, xs = np.mgrid[0:h, 0:w]
    shape = ((xs - 0.3 * w) / (0.12 * w)) ** 2 + ((ys - 0.45 * h) / (0.2 * h)) ** 2 <= 1
    pixels[shape] = pixels[shape] * 0.58 + np.array([90, 90, 96]) * 0.42
    result = compare(picture, jpeg(Image.fromarray(pixels.astype(np.uint8)), 70))
    assert result.match and result.edited
    region = result.regions[0]
    assert box_iou((region.x0, region.y0, region.x1, region.y1), (0.18, 0.25, 0.42, 0.65)) >= 0.5
    assert region.area == pytest.approx(0.075, abs=0.035)
