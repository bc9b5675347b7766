"""The parsed view catalog is cached in the runtime directory under the SQL files' digest:
a catalog read from the cache is the one parsed from the files, and a cache file that does
not fit the files is not believed."""

from __future__ import annotations

import json

from eviscene import views


def test_a_cached_catalog_is_the_parsed_one(tmp_path, monkeypatch):
    monkeypatch.setenv("EVISCENE_RUNTIME_DIR", str(tmp_path))
    parsed = views._dependency_order(views._read_definitions())  # finds what each view reads, writes the cache
    [cache] = list((tmp_path / "view-catalog").iterdir())
    assert views._dependency_order(views._read_definitions()) == parsed  # from the cache
    runs = next(d for d in parsed if d.name == "runs")
    # sql/10_runs/runs.sql reads these views (and the `events` relation, not a view)
    assert runs.reads == {"imported_runs", "episodes", "imported_episodes", "episode_errors"}
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
