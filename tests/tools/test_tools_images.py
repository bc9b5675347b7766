"""Perceptual matching: hashes, alignment, edit localisation, caption trimming."""

import numpy as np
import pytest
from tools_fixtures import CorpusBuilder
from PIL import Image, ImageDraw, ImageFilter
from tools_images import caption_band, caption_banner, crop_fraction, font, jpeg, paste_object, resize_to, scene

from eviscene.tools import Corpus, compare, find_content_box, phash_hex, prepare
from eviscene.tools.image_compare import GRID, MATCH_THRESHOLD
from eviscene.tools.images import band_free_strip, largest_channel


def hamming(a: str, b: str) -> int:
    return bin(int(a, 16) ^ int(b, 16)).count("1")


def test_phash_survives_resize_crop_and_recompression_but_not_a_different_picture():
    original = scene(1)
    copy = jpeg(resize_to(crop_fraction(original, 0.03, 0.02, 0.02, 0.03), 0.5), 40)
    assert hamming(phash_hex(original), phash_hex(copy)) <= 10
    assert min(hamming(phash_hex(original), phash_hex(scene(seed))) for seed in range(10, 16)) >= 16


def test_largest_channel_is_the_largest_of_each_pixels_three_values():
    values = np.array([[[1, 5, 3], [-2, -7, -1]], [[0, 0, 0], [9, np.nan, 7]]], np.float32)
    largest = largest_channel(values)
    assert largest.dtype == np.float32
    assert largest[0].tolist() == [5, -1] and largest[1, 0] == 0
    assert np.isnan(largest[1, 1])  # as max(axis=-1): a NaN channel makes the pixel NaN


@pytest.fixture(scope="module")
def picture():
    return scene(4)


def test_identical_copy_matches_without_changes(picture):
    result = compare(picture, jpeg(resize_to(picture, 0.6), 35))
    assert result.match and not result.edited
    assert result.similarity > 0.9 and result.layout_similarity > 0.95
    assert result.changed_blocks == 0 and result.total_blocks == GRID * GRID
    assert result.regions == []


def test_pasted_object_is_a_few_changed_blocks_where_it_was_pasted(picture):
    box = (0.55, 0.3, 0.68, 0.5)
    result = compare(picture, jpeg(paste_object(picture, box), 70))
    assert result.match and result.edited
    assert 1 <= result.changed_blocks <= 8
    region = result.regions[0]
    assert region.x0 == pytest.approx(box[0], abs=0.03) and region.x1 == pytest.approx(box[2], abs=0.03)
    assert region.y0 == pytest.approx(box[1], abs=0.03) and region.y1 == pytest.approx(box[3], abs=0.03)
    assert result.changed_fraction < 0.05


def test_removed_object_is_found_from_either_side(picture):
    edited = paste_object(picture, (0.2, 0.6, 0.3, 0.75), color=(250, 240, 60))
    # The reference holds the object, the case image lost it.
    result = compare(edited, jpeg(picture, 60))
    assert result.match and result.edited and result.changed_blocks >= 1


def test_a_change_of_colour_alone_counts(picture):
    # Nearly the grey level of the ground under it, but another hue.
    recoloured = paste_object(picture, (0.2, 0.6, 0.3, 0.75), color=(40, 90, 40))
    result = compare(picture, jpeg(recoloured, 60))
    assert result.match and result.edited


def test_brightened_copy_with_clipped_highlights_is_not_an_edit(picture):
    brighter = Image.eval(picture, lambda v: min(255, int(v * 1.2 + 15)))
    result = compare(picture, jpeg(brighter, 70))
    assert result.match and not result.edited


def test_unrelated_picture_does_not_match(picture):
    for seed in (5, 6, 7):
        result = compare(picture, jpeg(scene(seed), 60))
        assert not result.match and not result.edited
        assert result.similarity < MATCH_THRESHOLD


def test_crop_of_the_reference_matches_and_is_located(picture):
    query = jpeg(resize_to(crop_fraction(picture, 0.2, 0.1, 0.05, 0.15), 0.7), 50)
    result = compare(picture, query)
    assert result.match and not result.edited
    assert result.alignment["mode"] == "query_in_reference"
    # query px -> reference px: the crop started 20% from the left, 10% from the top
    assert result.alignment["offset_x"] == pytest.approx(0.2 * picture.width, abs=4)
    assert result.alignment["offset_y"] == pytest.approx(0.1 * picture.height, abs=4)
    assert result.alignment["scale_x"] == pytest.approx(1 / 0.7, rel=0.02)


def test_reference_that_is_itself_a_crop_matches(picture):
    result = compare(crop_fraction(picture, 0.1, 0.1, 0.1, 0.1), jpeg(picture, 60))
    assert result.match and not result.edited
    assert result.alignment["mode"] == "reference_in_query"
    assert result.overlap == pytest.approx(0.64, abs=0.06)


def test_caption_banner_is_trimmed_before_matching(picture):
    captioned = caption_banner(resize_to(picture, 0.8), "Smoke over the city during the protest")
    (x0, y0, x1, y1), trimmed = find_content_box(np.asarray(captioned))
    assert (x0, y0, x1) == (0, 0, captioned.width)
    assert y1 == pytest.approx(round(picture.height * 0.8), abs=2)
    assert "bottom" in trimmed
    result = compare(picture, jpeg(captioned, 70))
    assert result.match and not result.edited
    assert result.query_trimmed["bottom"] == pytest.approx(captioned.height - round(picture.height * 0.8), abs=3)


def test_caption_banner_on_top_is_trimmed_too(picture):
    captioned = caption_banner(picture, "BREAKING: fire at the harbor", where="top")
    prepared = prepare(jpeg(captioned, 80))
    assert prepared.content_box[1] == pytest.approx(captioned.height - picture.height, abs=3)
    assert compare(picture, prepared).match


def test_uniform_picture_is_not_trimmed_away():
    picture = Image.new("RGB", (300, 200), "white")
    picture.paste(scene(2, (80, 60)), (110, 70))  # a small object on a white page
    box, trimmed = find_content_box(np.asarray(picture))
    assert box == (0, 0, 300, 200) and trimmed == {}


@pytest.mark.parametrize("position", [0.05, 0.45, 0.78])
def test_dark_caption_band_is_ignored(picture, position):
    banded = jpeg(caption_band(picture, "BREAKING: crowds gather downtown", at=position), 70)
    prepared = prepare(banded)
    assert len(prepared.bands) == 1
    top, bottom = prepared.bands[0]
    band_height = max(40, picture.height // 8) / picture.height
    assert top == pytest.approx(position, abs=0.02) and bottom == pytest.approx(position + band_height, abs=0.02)
    assert band_free_strip(prepared) is not None
    result = compare(picture, prepared)
    assert result.match and not result.edited
    assert result.masked_fraction == pytest.approx(band_height, abs=0.05)


def test_ocr_text_boxes_mark_pixels_to_ignore(picture):
    boxes = [[[100, 300], [200, 300], [200, 330], [100, 330]]]  # pad: 0.6 * 30 = 18 px
    prepared = prepare(picture, text_boxes=boxes)
    rows = np.flatnonzero(prepared.text_mask.any(axis=1)) / prepared.scale
    cols = np.flatnonzero(prepared.text_mask.any(axis=0)) / prepared.scale
    assert rows.min() == pytest.approx(300 - 18, abs=2) and rows.max() == pytest.approx(330 + 18, abs=2)
    assert cols.min() == pytest.approx(100 - 18, abs=2) and cols.max() == pytest.approx(200 + 18, abs=2)


def test_a_text_badge_is_not_an_edit_when_ocr_boxes_are_given(picture):
    badged = picture.copy()
    draw = ImageDraw.Draw(badged)
    draw.rectangle((500, 12, 625, 44), fill=(200, 20, 30))
    draw.text((510, 16), "BREAKING", fill="white", font=font(20))
    query = jpeg(badged, 75)
    assert compare(picture, query).edited  # without OCR the badge is a local change
    boxes = [[[508, 17], [612, 17], [612, 39], [508, 39]]]  # where OCR finds the word
    result = compare(picture, prepare(query, text_boxes=boxes))
    assert result.match and not result.edited


def test_overlapping_crops_of_one_photo_match(picture):
    # Neither contains the other: one lacks the photo's right part, the other its left and top.
    left = crop_fraction(picture, 0.0, 0.0, 0.15, 0.0)
    right = jpeg(resize_to(crop_fraction(picture, 0.12, 0.1, 0.0, 0.0), 0.8), 60)
    result = compare(left, right)
    assert result.match and not result.edited
    assert 0.6 < result.overlap < 0.95


def test_smooth_picture_matches_on_layout_when_detail_is_grain():
    gradient = Image.linear_gradient("L").resize((480, 320)).convert("RGB")

    def smooth(seed: int) -> Image.Image:
        clouds = Image.blend(gradient, scene(seed, (480, 320)).filter(ImageFilter.GaussianBlur(20)), 0.5)
        grain = np.random.default_rng(seed).normal(0, 6, (320, 480, 3))
        return Image.fromarray(np.clip(np.asarray(clouds, float) + grain, 0, 255).astype(np.uint8))

    result = compare(smooth(8), jpeg(resize_to(smooth(8), 0.5), 30))
    assert result.similarity < MATCH_THRESHOLD < result.layout_similarity  # fine detail is mostly grain here
    assert result.match and not result.edited
    other = compare(smooth(8), jpeg(resize_to(smooth(9), 0.5), 30))  # same gradient, other clouds
    assert not other.match


def test_text_changed_in_the_scene_is_an_edit_but_a_caption_is_not(picture):
    signed = picture.copy()
    ImageDraw.Draw(signed).rectangle((180, 250, 460, 300), fill=(235, 225, 200))
    original = signed.copy()
    ImageDraw.Draw(original).text((200, 262), "FAIR PRICES", fill=(150, 30, 30), font=font(24))
    altered = signed.copy()
    ImageDraw.Draw(altered).text((200, 262), "BURN IT ALL", fill=(150, 30, 30), font=font(24))
    boxes = [[[198, 262], [360, 262], [360, 290], [198, 290]]]
    result = compare(original, prepare(jpeg(altered, 80), text_boxes=boxes), reference_has_text=lambda crop: True)
    assert result.match and result.edited
    assert [region.kind for region in result.regions] == ["text"]
    # The same change where the reference shows no text is taken for a caption laid over it.
    result = compare(original, prepare(jpeg(altered, 80), text_boxes=boxes), reference_has_text=lambda crop: False)
    assert result.match and not result.edited


def test_edit_and_caption_and_crop_together(picture):
    query = caption_banner(crop_fraction(paste_object(picture, (0.4, 0.3, 0.55, 0.5)), 0.05, 0.05, 0.05, 0.05), "Text")
    result = compare(picture, jpeg(query, 60))
    assert result.match and result.edited and 1 <= len(result.regions) <= 2


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    builder = CorpusBuilder(tmp_path_factory.mktemp("corpus"))
    images = {seed: builder.image(f"s{seed}.jpg", scene(seed), alt=f"scene {seed}") for seed in range(20, 32)}
    for seed, image in images.items():
        builder.page(f"https://pics.example/{seed}", f"Scene {seed}", f"Picture number {seed}.", images=[image])
    # the same bytes on a second page
    builder.page("https://mirror.example/20", "Mirror", "A mirror.", images=[images[20]])
    corpus = Corpus.load(builder.write())
    return corpus, corpus.image_index()


def test_index_groups_identical_images_and_finds_edited_cropped_copies(indexed):
    corpus, index = indexed
    assert len(index) == 12
    query = prepare(jpeg(caption_banner(crop_fraction(paste_object(scene(20), (0.5, 0.5, 0.6, 0.65)), 0.1, 0.05, 0.05, 0.1), "A caption"), 55))
    results = index.similar(query)
    assert [m.comparison.match for m in results].count(True) == 1
    best = results[0]
    assert best.comparison.match and best.comparison.edited
    assert sorted(e.page.url for e in best.entries) == ["https://mirror.example/20", "https://pics.example/20"]


def test_index_finds_nothing_for_an_unknown_picture(indexed):
    _, index = indexed
    assert not any(m.comparison.match for m in index.similar(prepare(jpeg(scene(99), 60))))
