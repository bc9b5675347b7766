"""A case image swapped after preflight is never analysed under its recorded hash: the episode
reads the file's bytes once, checks them against the case's `image_sha256`, and ends as an error
with no perception report (which the log would otherwise serve to later runs as that image's).
Real offline runs on a few cases of a copy of the bundled release."""

import gc
import hashlib
import shutil
from pathlib import Path

import anyio
import pytest

from eviscene.agent.provider import ImageStore
from eviscene.eval.options import EvalOptions
from eviscene.eval.run import start_run
from eviscene.log import EventLog
from eviscene.release import CaseImageChanged, read_case_image

BUNDLED = Path(__file__).resolve().parents[2] / "examples" / "eviscene-demo-v1"


class SwapsAnImageOnceAnEpisodeFinished:
    """Copies demo-0002's picture over demo-0003's after the first episode (demo-0001) ends."""

    def __init__(self, images: Path):
        self.images, self.swapped = images, False

    def planned(self, run_id: str, episodes: int) -> None: ...

    def finished(self, spec, finished) -> None:
        if not self.swapped:
            shutil.copyfile(self.images / "demo-0002.jpg", self.images / "demo-0003.jpg")
            self.swapped = True


def perceived(log: EventLog, run_id: str) -> dict[str, str]:
    rows = log.sql(
        "SELECT s.payload->>'case_id' AS case_id, p.payload->>'ocr_text' AS text FROM events p "
        "JOIN events s ON s.run_id = p.run_id AND s.episode_id = p.episode_id AND s.type = 'episode.scheduled' "
        "WHERE p.type = 'perception.reported' AND p.run_id = ?", [run_id]
    ).to_pylist()
    return {row["case_id"]: row["text"] for row in rows}


def test_an_image_swapped_during_a_run_ends_its_episode_and_is_never_perceived_under_the_recorded_hash(tmp_path):
    release = Path(shutil.copytree(BUNDLED, tmp_path / "demo"))
    images = release / "runtime_input" / "images"
    original = images / "demo-0003.jpg"
    expected = hashlib.sha256(original.read_bytes()).hexdigest()
    swapped_in = hashlib.sha256((images / "demo-0002.jpg").read_bytes()).hexdigest()
    log = EventLog(tmp_path / "log.duckdb")
    options = EvalOptions(benchmark=str(release / "runtime_input" / "cases.jsonl"), limit=3, concurrency=1)
    anyio.run(lambda: start_run(log, options, observer=SwapsAnImageOnceAnEpisodeFinished(images), run_id="swap"))

    outcomes = {row["case_id"]: (row["termination"], row["error"]) for row in
                log.sql("SELECT case_id, termination, error FROM episodes WHERE run_id = 'swap'").to_pylist()}
    assert outcomes["demo-0001"] == outcomes["demo-0002"] == ("completed", None)
    assert outcomes["demo-0003"] == (
        "error", f"CaseImageChanged: image {original} changed since the run started: sha256 {swapped_in}, expected {expected}"
    )
    texts = perceived(log, "swap")
    assert set(texts) == {"demo-0001", "demo-0002"}  # nothing recorded for demo-0003, under any hash

    # A later run over the restored picture perceives it afresh and answers as a clean run does.
    shutil.copyfile(BUNDLED / "runtime_input" / "images" / "demo-0003.jpg", original)
    anyio.run(lambda: start_run(log, options, run_id="after"))
    clean = EventLog(tmp_path / "clean.duckdb")
    anyio.run(lambda: start_run(clean, options, run_id="clean"))
    assert perceived(log, "after")["demo-0003"] == perceived(clean, "clean")["demo-0003"] != texts["demo-0002"]
    verdicts = "SELECT case_id, verdict FROM episodes WHERE run_id = ? ORDER BY case_id"
    assert log.sql(verdicts, ["after"]).to_pylist() == clean.sql(verdicts, ["clean"]).to_pylist()


def test_the_model_is_sent_only_an_image_that_still_hashes_to_its_url(tmp_path):
    image = Path(shutil.copyfile(BUNDLED / "runtime_input" / "images" / "demo-0001.jpg", tmp_path / "case.jpg"))
    recorded = hashlib.sha256(image.read_bytes()).hexdigest()
    images = ImageStore()
    url = images.add(recorded, image)
    assert images.read(url) == image.read_bytes()
    shutil.copyfile(BUNDLED / "runtime_input" / "images" / "demo-0002.jpg", image)
    with pytest.raises(CaseImageChanged, match=f"^image {image} changed since the run started: sha256 [0-9a-f]{{64}}, expected {recorded}$"):
        images.read(url)


def test_episodes_holding_one_image_share_its_checked_bytes_and_the_next_reads_it_again(tmp_path):
    """The rollouts of a case in flight, and the copy their model requests send, share one
    checked read of the picture (256 episodes in flight held 256 copies); once none holds it,
    the next episode reads the file again, and a swapped file ends that one."""
    image = Path(shutil.copyfile(BUNDLED / "runtime_input" / "images" / "demo-0001.jpg", tmp_path / "case.jpg"))
    recorded = hashlib.sha256(image.read_bytes()).hexdigest()
    first = read_case_image(image, recorded)
    images = ImageStore()
    url = images.add(recorded, image)
    shutil.copyfile(BUNDLED / "runtime_input" / "images" / "demo-0002.jpg", image)  # a swap while it is held
    assert read_case_image(image, recorded) is first and images.read(url) is first.data
    del first
    gc.collect()
    with pytest.raises(CaseImageChanged):
        read_case_image(image, recorded)
