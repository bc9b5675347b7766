
import os

import pytest
from tools_fixtures import CorpusBuilder, sha256_text
from tools_images import scene

from eviscene.errors import ReleaseError
from eviscene.tools import Corpus


@pytest.fixture
def small(tmp_path):
    builder = CorpusBuilder(tmp_path / "corpus")
    first = builder.image("a.jpg", scene(1, (160, 120)), alt="first")
    second = builder.image("b.jpg", scene(2, (160, 120)), alt="second")
    builder.page("https://www.site.com/one/", "One", "Page one text.", images=[first, second])
    builder.page("http://other.org/two", "Two", "Page two text.", images=[first], published=None)
    return builder


def test_load_indexes_pages_by_normalized_url(small):
    corpus = Corpus.load(small.write())
    assert [p.page_id for p in corpus.pages] == ["p1", "p2"]
    assert corpus.page("HTTPS://site.com/one").page_id == "p1"
    assert corpus.page("https://site.com/one#image=images/a.jpg").page_id == "p1"
    assert corpus.page("other.org/two").page_id == "p2"  # scheme-less form, unambiguous
    assert corpus.page("https://other.org/two").page_id == "p2"  # http/https meet when unambiguous
    assert corpus.page("https://site.com/three") is None
    assert corpus.pages[1].published is None


def test_load_accepts_the_pages_file_itself(small):
    root = small.write()
    assert len(Corpus.load(root / "pages.jsonl").pages) == 2


def test_resolve_image_forms(small):
    corpus = Corpus.load(small.write())
    by_url = corpus.resolve_image("https://www.site.com/one/#image=images/b.jpg")
    assert [e.image.alt for e in by_url] == ["second"]
    assert by_url[0].url == "https://www.site.com/one/#image=images/b.jpg"
    assert by_url[0].file == corpus.root / "images" / "b.jpg"
    assert [e.page.page_id for e in corpus.resolve_image("images/a.jpg")] == ["p1"]
    assert [e.image.alt for e in corpus.resolve_image("https://site.com/one")] == ["first", "second"]
    assert corpus.resolve_image("https://site.com/one#image=images/zzz.jpg") == []
    assert corpus.resolve_image("https://nowhere.com/x") == []


def test_malformed_json_reports_file_and_line(small):
    root = small.write()
    path = root / "pages.jsonl"
    path.write_text(path.read_text() + "{broken\n")
    with pytest.raises(ReleaseError, match=r"pages\.jsonl:3: not valid JSON"):
        Corpus.load(root)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r.pop("url"), r"pages\.jsonl:1: url: Field required"),
        (lambda r: r.update(text="tampered"), r"pages\.jsonl:1: content_sha256 does not match"),
        (lambda r: r.update(published="March 2020"), r"pages\.jsonl:1: published"),
        (lambda r: r["images"][0].update(path="../outside.jpg"), r"image path '\.\./outside\.jpg' contains '\.\.'; it must stay inside the corpus"),
        (lambda r: r["images"][0].update(path="/etc/passwd"), "image path '/etc/passwd' is absolute; it must be relative to the corpus"),
        (lambda r: r["images"][0].update(path="images/missing.jpg"), "not found"),
    ],
)
def test_invalid_rows_are_rejected_with_their_line(small, change, message):
    change(small.rows[0])
    with pytest.raises(ReleaseError, match=message):
        Corpus.load(small.write())


def test_symlink_escaping_the_corpus_is_rejected(small, tmp_path):
    outside = tmp_path / "outside.jpg"
    scene(3, (64, 48)).save(outside)
    (small.root / "images" / "link.jpg").symlink_to(outside)
    small.rows[0]["images"][0]["path"] = "images/link.jpg"
    with pytest.raises(ReleaseError, match=r"image path 'images/link\.jpg' resolves to .*outside\.jpg, outside the corpus directory"):
        Corpus.load(small.write())


def test_a_pages_file_linked_out_of_the_corpus_is_refused_and_one_linked_inside_is_read(small, tmp_path):
    """The images were refused through a link leading out and pages.jsonl was read through
    one: its rows reached the model and the log. It is held to its images' rule."""
    root = small.write()
    outside = tmp_path / "outside.jsonl"
    (root / "pages.jsonl").rename(outside)
    (root / "pages.jsonl").symlink_to(outside)
    with pytest.raises(ReleaseError, match=r"corpus/pages\.jsonl: corpus pages file path 'pages\.jsonl' resolves to "
                                           r".*outside\.jsonl, outside the corpus directory"):
        Corpus.load(root)
    (root / "pages.jsonl").unlink()
    outside.rename(root / "pages-v2.jsonl")
    (root / "pages.jsonl").symlink_to("pages-v2.jsonl")
    assert [p.page_id for p in Corpus.load(root).pages] == ["p1", "p2"]


def test_duplicate_urls_and_ids_are_rejected(small):
    small.page("https://site.com/one", "Again", "Other text.")
    with pytest.raises(ReleaseError, match=r"pages\.jsonl:3: url .* repeats line 1"):
        Corpus.load(small.write())
    small.rows[2].update(url="https://site.com/three", page_id="p1")
    with pytest.raises(ReleaseError, match=r"pages\.jsonl:3: page_id 'p1' repeats line 1"):
        Corpus.load(small.write())


def test_image_sha256_is_verified_when_the_image_index_is_built(small):
    small.rows[0]["images"][1]["sha256"] = "0" * 64
    corpus = Corpus.load(small.write())
    with pytest.raises(ReleaseError, match="sha256 is"):
        corpus.image_index()


def test_a_pages_file_missing_a_folder_or_a_pipe_is_named_for_what_it_is(tmp_path):
    """A named pipe (or a folder) at pages.jsonl was reported as "not found"."""
    with pytest.raises(ReleaseError, match=r"pages\.jsonl: corpus pages file does not exist$"):
        Corpus.load(tmp_path)
    (tmp_path / "pages.jsonl").mkdir()
    with pytest.raises(ReleaseError, match=r"pages\.jsonl: corpus pages file is a folder, not a file$"):
        Corpus.load(tmp_path)
    (tmp_path / "pages.jsonl").rmdir()
    os.mkfifo(tmp_path / "pages.jsonl")
    with pytest.raises(ReleaseError, match=r"pages\.jsonl: corpus pages file is a named pipe \(FIFO\), not a regular file$"):
        Corpus.load(tmp_path)


def test_content_hash_is_of_utf8_text(tmp_path):
    builder = CorpusBuilder(tmp_path / "c")
    builder.page("https://u.com/ü", "Ünïcode", "Grüße aus Köln — 東京")
    corpus = Corpus.load(builder.write())
    assert corpus.pages[0].content_sha256 == sha256_text("Grüße aus Köln — 東京")
