"""Real parts for the viewer tests: runs made by the real CLI in real processes, `eviscene
view` as a real server on a loopback port, and Debian's Chromium driven by Playwright."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from viewer_harness import CHROMIUM, CHROMIUM_FLAGS, HOSTILE, RELEASE, Server, run_ids, start_eval


@dataclass
class Logs:
    demo: Path  # two runs of the bundled release: A (2 rollouts) and B (image retrieval disabled)
    run_a: str
    run_b: str
    hostile: Path  # a run over a release whose titles, captions and texts carry markup
    hostile_run: str


def _hostile_release(target: Path) -> Path:
    """The bundled release with markup in every page title and image caption (the page text
    is pinned by content_sha256); tool results quote both."""
    shutil.copytree(RELEASE, target)
    pages = []
    for line in (target / "corpus" / "pages.jsonl").read_text(encoding="utf-8").splitlines():
        page = json.loads(line)
        page["title"] = f"{HOSTILE} {page['title']}"
        for image in page.get("images", []):
            for key in ("caption", "alt"):
                if key in image:
                    image[key] = f"{HOSTILE} {image[key]}"
        pages.append(json.dumps(page, ensure_ascii=False))
    (target / "corpus" / "pages.jsonl").write_text("\n".join(pages) + "\n", encoding="utf-8")
    return target / "runtime_input" / "cases.jsonl"


@pytest.fixture(scope="session")
def logs(tmp_path_factory) -> Logs:
    base = tmp_path_factory.mktemp("viewer-logs")
    demo, hostile = base / "demo.duckdb", base / "hostile.duckdb"
    benchmark = RELEASE / "runtime_input" / "cases.jsonl"
    # Run A first (its run id, a timestamp, sorts first), then B and the hostile run at once.
    first = start_eval(demo, benchmark, base / "run-a", "--limit", "4", "--rollouts-per-case", "2", "--concurrency", "2")
    assert first.wait(timeout=900) == 0, first.stderr.read()
    hostile_benchmark = _hostile_release(base / "hostile-release")
    others = [
        start_eval(demo, benchmark, base / "run-b", "--limit", "4", "--rollouts-per-case", "1", "--concurrency", "2",
                   "--disable-image-retrieval"),
        start_eval(hostile, hostile_benchmark, base / "run-h", "--limit", "2", "--rollouts-per-case", "1"),
    ]
    for process in others:
        assert process.wait(timeout=900) == 0, process.stderr.read()
    run_a, run_b = run_ids(demo)
    return Logs(demo, run_a, run_b, hostile, run_ids(hostile)[0])


@pytest.fixture(scope="session")
def server(logs):
    running = Server(logs.demo)
    yield running
    running.stop()


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory) -> Path:
    folder = os.environ.get("EVISCENE_TEST_ARTIFACTS")
    path = Path(folder) if folder else tmp_path_factory.mktemp("viewer-screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


# Module scope: the sync API marks an asyncio loop as running in this thread until it stops,
# so it must stop before tests elsewhere call asyncio.run or anyio.run (a session-wide
# browser broke every async test that ran after this folder).
@pytest.fixture(scope="module")
def browser():
    playwright_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.fail("Chromium is missing: apt-get install -y chromium (.ci/run installs it)")
    with playwright_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield launched
        launched.close()


@dataclass
class Watched:
    """A browser page whose console errors, page errors and failed requests are recorded."""

    page: object
    problems: list[str] = field(default_factory=list)

    def assert_clean(self) -> None:
        assert not self.problems, "\n".join(self.problems)


@pytest.fixture
def watched(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    # Generous: the views are computed per request, and CI machines are shared.
    context.set_default_timeout(180_000)
    page = context.new_page()
    result = Watched(page)
    page.on("console", lambda m: m.type == "error" and result.problems.append(f"console: {m.text}"))
    page.on("pageerror", lambda e: result.problems.append(f"page error: {e}"))
    # A runs-table poll still in flight when the test navigates away is cut off (ERR_ABORTED);
    # any other failed request is a problem.
    page.on("requestfailed", lambda r: (r.url.endswith("/fragment/runs") and "ERR_ABORTED" in (r.failure or ""))
            or result.problems.append(f"failed request: {r.url} {r.failure}"))
    page.on("response", lambda r: r.status >= 400 and result.problems.append(f"HTTP {r.status}: {r.url}"))
    yield result
    context.close()


