"""A reverse image search's answers are stored beside the corpus's cached index: a query
picture answered once is answered again (by another index object: another run or process)
from disk, with the same candidates and comparisons a fresh search gives, and only the
same picture (every field a search reads) finds them, a store that cannot be written
costs only the recomputation, and answers of code unused for weeks are removed."""

from __future__ import annotations

import dataclasses
import json
import os
import time

import numpy as np
import pytest

from eviscene.tools.corpus import Corpus
from eviscene.tools.image_index import ImageIndex
from eviscene.tools.image_store import AnswerStore, picture_digest, software_digest
from eviscene.tools.images import prepare

from tools_fixtures import CorpusBuilder
from tools_images import caption_banner, crop_fraction, jpeg, paste_object, scene

SEEDS = range(200, 212)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Corpus:
    builder = CorpusBuilder(tmp_path_factory.mktemp("corpus"))
    for seed in SEEDS:
        image = builder.image(f"s{seed}.jpg", scene(seed, (320, 213)), alt=f"scene {seed}")
        builder.page(f"https://pics.example/{seed}", f"Scene {seed}", f"Picture number {seed}.", images=[image])
    return Corpus.load(builder.write())


def edited_copy():
    """Scene 203 cropped, a red object pasted in its middle and a caption banner added."""
    return prepare(jpeg(caption_banner(crop_fraction(paste_object(scene(203, (320, 213)), (0.5, 0.5, 0.6, 0.65)),
                                                     0.1, 0.05, 0.05, 0.1), "A caption"), 55))


def answers(matches) -> list:
    return [(m.sha256, m.hash_distance, m.comparison) for m in matches]


def test_a_query_answered_once_is_answered_again_from_disk(corpus, tmp_path):
    fresh = ImageIndex.build(corpus)  # in memory: no stored answers
    query = edited_copy()
    expected = answers(fresh.similar(query))
    # The edited copy matches scene 203's page only, as an edited copy; others do not match.
    assert [(m.entries[0].page.url, m.comparison.match, m.comparison.edited) for m in fresh.similar(query)][0] == \
        ("https://pics.example/203", True, True)
    assert sum(m.comparison.match for m in fresh.similar(query)) == 1

    first = ImageIndex.cached(corpus, tmp_path)
    assert answers(first.similar(query)) == expected
    stored = sorted((tmp_path).glob("*.answers/*/*.json"))
    assert len(stored) == 1 + len(expected)  # the candidates, and one file per comparison
    assert {path.parent.name for path in stored} == {software_digest()}  # in the answering software's folder

    # Another index object (as in another process) and another object of the same picture.
    again = ImageIndex.cached(corpus, tmp_path)
    assert answers(again.similar(dataclasses.replace(query))) == expected
    assert sorted(tmp_path.glob("*.answers/*/*.json")) == stored

    # They are read from disk: a stored comparison altered by hand is what comes back.
    for path in stored:
        data = json.loads(path.read_text())
        if isinstance(data, dict) and data["match"]:
            path.write_text(json.dumps({**data, "similarity": 0.123}))
    altered = ImageIndex.cached(corpus, tmp_path).similar(dataclasses.replace(query))
    assert [m.comparison.similarity for m in altered if m.comparison.match] == [0.123]


def test_only_the_same_picture_finds_stored_answers(corpus, tmp_path):
    query = edited_copy()
    index = ImageIndex.cached(corpus, tmp_path)
    index.similar(query)
    for path in tmp_path.glob("*.answers/*/*.json"):  # every stored comparison says "a match at 0.123"
        data = json.loads(path.read_text())
        if isinstance(data, dict):
            path.write_text(json.dumps({**data, "match": True, "similarity": 0.123}))

    # One pixel changed, a text mask added, a band hint added: each another picture.
    pixel = query.rgb.copy()
    pixel[10, 10] ^= 1
    mask = np.zeros(query.rgb.shape[:2], bool)
    mask[5:15, 5:50] = True
    variants = [dataclasses.replace(query, rgb=pixel), dataclasses.replace(query, text_mask=mask),
                dataclasses.replace(query, bands=((0.8, 0.95),))]
    # Every other field counts too (digests only).
    x0, y0, x1, y1 = query.content_box
    others = [dataclasses.replace(query, content_box=(x0 + 1, y0, x1, y1)), dataclasses.replace(query, size=(query.size[0] + 1, query.size[1])),
              dataclasses.replace(query, trimmed={**query.trimmed, "left": 7}), dataclasses.replace(query, scale=query.scale * 1.001)]
    digests = {picture_digest(query), *(picture_digest(v) for v in variants + others)}
    assert len(digests) == 8
    assert picture_digest(dataclasses.replace(query)) == picture_digest(query)  # a copy is the same picture
    for variant in variants:
        similarities = [m.comparison.similarity for m in ImageIndex.cached(corpus, tmp_path).similar(variant)]
        assert 0.123 not in similarities


def test_an_unwritable_store_costs_only_the_recomputation(corpus, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the answers' folder would be")
    index = ImageIndex.build(corpus)
    expected = answers(index.similar(edited_copy()))
    index._answers = AnswerStore(blocker / "answers")
    assert answers(index.similar(edited_copy())) == expected
    assert index._answers.get("anything", str) is None



def test_answers_of_code_unused_for_weeks_are_removed_when_answers_are_stored(tmp_path):
    folder = tmp_path / "corpus.answers"
    weeks_ago = time.time() - 15 * 86_400
    for old_code in ("a" * 64, software_digest()):
        (folder / old_code).mkdir(parents=True)
        (folder / old_code / "answer.json").write_text("[]")
        os.utime(folder / old_code, (weeks_ago, weeks_ago))
    store = AnswerStore(folder)  # this code's answers: marked used
    store.put("query", "[1]")
    assert sorted(p.name for p in folder.iterdir()) == [software_digest()]
    assert store.get("query", json.loads) == [1]
