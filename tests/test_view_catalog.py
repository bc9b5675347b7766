"""The parsed view catalog is cached in the runtime directory under the SQL files' digest:
a catalog read from the cache is the one parsed from the files, a cache file that does
not fit the files is not believed, and catalogs of code unused for weeks are removed."""

from __future__ import annotations

import json
import os
import time

from eviscene import views


def test_a_cached_catalog_is_the_parsed_one(tmp_path, monkeypatch):
    monkeypatch.setenv("EVISCENE_RUNTIME_DIR", str(tmp_path))
    parsed = views._dependency_order(views._read_definitions())  # finds what each view reads, writes the cache
    [cache] = list((tmp_path / "view-catalog").iterdir())
    assert views._dependency_order(views._read_definitions()) == parsed  # from the cache
    runs = next(d for d in parsed if d.name == "runs")
    # sql/10_runs/runs.sql reads these views (and the `events` relation, not a view)
    assert runs.reads == {"imported_runs", "episodes", "imported_episodes", "episode_errors", "run_manifests", "run_shards"}
    assert json.loads(cache.read_text())["10_runs/runs.sql"] == sorted(runs.reads)


def test_a_cache_that_does_not_fit_the_files_is_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv("EVISCENE_RUNTIME_DIR", str(tmp_path))
    parsed = views._read_definitions()
    [cache] = list((tmp_path / "view-catalog").iterdir())
    stored = json.loads(cache.read_text())
    stored["10_runs/runs.sql"] = ["no_such_view"]
    cache.write_text(json.dumps(stored))
    assert views._read_definitions() == parsed
    cache.write_text("{not json")
    assert views._read_definitions() == parsed
    assert json.loads(cache.read_text())["10_runs/runs.sql"] == sorted(next(d for d in parsed if d.name == "runs").reads)


def test_catalogs_unused_for_weeks_are_removed_when_one_is_written_and_the_one_read_is_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("EVISCENE_RUNTIME_DIR", str(tmp_path))
    folder = tmp_path / "view-catalog"
    folder.mkdir()
    weeks_ago = time.time() - 15 * 86_400
    stale = folder / ("0" * 64 + ".json")  # an older code's catalog
    stale.write_text("{}")
    os.utime(stale, (weeks_ago, weeks_ago))
    views._read_definitions()  # parsed and written: the folder is pruned
    [cache] = list(folder.iterdir())
    assert cache != stale
    os.utime(cache, (weeks_ago, weeks_ago))
    views._read_definitions()  # read from the cache: marked used
    assert cache.stat().st_mtime > weeks_ago
