"""`eviscene import`: what each source brings into the log, idempotence and the errors
that name the file, line or id at fault."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from dataset_builders import write_case_split, write_eligibility, write_jsonl, write_run_dir

from eviscene.cli.main import cli
from eviscene.imports import ArtifactError, import_path
from eviscene.rules import jsonl_parts


def run_dir(tmp_path):
    return write_run_dir(tmp_path / "run", "run-a", [
        {"episode_id": "a--r000", "case_id": "a", "families": ["content:x"]},
        {"episode_id": "b--r000", "case_id": "b"},
    ])


def test_a_run_directory_becomes_one_event_per_file_with_its_bytes(log, tmp_path):
    run = run_dir(tmp_path)
    result = import_path(log, run)
    assert result.source_kind == "run_dir" and result.status == "imported" and result.import_id.startswith("import-")
    files = log.sql("SELECT kind, relative_path, sha256, blob_sha256 FROM imported_files ORDER BY kind, relative_path").to_pylist()
    assert [(f["kind"], f["relative_path"]) for f in files] == [
        ("perception_trajectories", "perception_trajectories.jsonl"),
        ("run_manifest", "run_manifest.json"),
        ("trace", "traces/a--r000.json"),
        ("trace", "traces/b--r000.json"),
        ("trajectory_scores", "trajectory_scores.jsonl"),
        ("trajectory_sft", "trajectory_sft.jsonl"),
    ]
    import hashlib
    stored = log.sql(
        "SELECT b.content FROM imported_files f JOIN blobs b ON b.sha256 = f.blob_sha256 WHERE f.relative_path = 'traces/a--r000.json'"
    )["content"][0].as_py()
    assert stored == (run / "traces" / "a--r000.json").read_bytes()
    assert all(f["sha256"] == f["blob_sha256"] for f in files)
    assert hashlib.sha256(stored).hexdigest() == files[2]["sha256"]
    source = log.sql("SELECT source_kind, files, metadata->>'run_id' AS run_id FROM import_sources").to_pylist()
    assert source == [{"source_kind": "run_dir", "files": 6, "run_id": "run-a"}]


def test_importing_the_same_bytes_twice_changes_nothing(log, tmp_path):
    run = run_dir(tmp_path)
    first = import_path(log, run)
    before = log.sql("SELECT count(*) AS n FROM events")["n"][0].as_py()
    second = import_path(log, run)
    assert second.import_id == first.import_id and second.status == "already imported"
    assert log.sql("SELECT count(*) AS n FROM events")["n"][0].as_py() == before
    (run / "traces" / "b--r000.json").write_text("{}", encoding="utf-8")
    assert import_path(log, run).import_id != first.import_id  # different bytes, a new import


def test_a_malformed_row_is_named_by_file_and_line(log, tmp_path):
    run = run_dir(tmp_path)
    (run / "trajectory_scores.jsonl").write_text('{"episode_id": "a--r000"}\n\n{"episode_id": \n', encoding="utf-8")
    with pytest.raises(ArtifactError, match=r"trajectory_scores\.jsonl:3: not valid JSON"):
        import_path(log, run)
    (run / "trajectory_scores.jsonl").write_text('{"episode_id": "a--r000"}\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(ArtifactError, match=r"trajectory_scores\.jsonl:2: must be a JSON object"):
        import_path(log, run)
    (run / "traces" / "a--r000.json").write_text("[]", encoding="utf-8")
    with pytest.raises(ArtifactError, match=r"a--r000\.json: expected a JSON object"):
        import_path(log, run)


def test_duplicates_are_named(log, tmp_path):
    run = run_dir(tmp_path)
    rows = [json.loads(line) for line in (run / "perception_trajectories.jsonl").read_text().splitlines()]
    write_jsonl(run / "perception_trajectories.jsonl", rows + [rows[0]])
    with pytest.raises(ArtifactError, match=r"perception_trajectories\.jsonl:3: duplicate perception episode a--r000"):
        import_path(log, run)
    write_jsonl(run / "perception_trajectories.jsonl", rows)
    (run / "traces" / "copy.json").write_text((run / "traces" / "a--r000.json").read_text(), encoding="utf-8")
    with pytest.raises(ArtifactError, match="duplicate episode a--r000 in a--r000.json and copy.json"):
        import_path(log, run)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"perception": None}, "perception episode b--r000 lacks perception (the report the example teaches)"),
        ({"perception": "gone"}, "perception episode b--r000 lacks perception (the report the example teaches)"),
        ({"perception": {}}, "perception episode b--r000 has perception {}: it must be an object holding an ocr_text string"),
        ({"perception": {"ocr_text": None}},
         'perception episode b--r000 has perception {"ocr_text":null}: it must be an object holding an ocr_text string'),
        ({"perception": []}, "perception episode b--r000 has perception []: it must be an object holding an ocr_text string"),
        ({"case_id": "gone"}, "perception episode b--r000 lacks case_id"),
        ({"case_id": 17}, "perception episode b--r000 has case_id 17: it must be a string"),
        ({"episode_id": 17}, "perception episode row has episode_id 17: it must be a string"),
    ],
)
def test_a_perception_row_seed_002_would_not_validate_is_refused_by_file_and_line(log, tmp_path, change, message):
    """Seed 002 reads each row as a `PerceptionExample`: one without its target (a perception
    report with its ocr_text) or whose ids are no strings is refused, not exported as written."""
    run = run_dir(tmp_path)
    rows = [json.loads(line) for line in (run / "perception_trajectories.jsonl").read_text().splitlines()]
    rows[1].update({key: value for key, value in change.items() if value != "gone"})
    for key in [key for key, value in change.items() if value == "gone"]:
        del rows[1][key]
    write_jsonl(run / "perception_trajectories.jsonl", rows)
    with pytest.raises(ArtifactError) as refused:
        import_path(log, run)
    assert str(refused.value) == f"{run / 'perception_trajectories.jsonl'}:2: {message}"
    assert log.sql("SELECT count(*) AS n FROM import_sources")["n"][0].as_py() == 0
    result = CliRunner().invoke(cli, ["--db", str(log.path), "dataset", "export", "--run-dir", str(run), "--out", str(tmp_path / "ds")])
    assert result.exit_code == 2 and result.output == f"Error: {run / 'perception_trajectories.jsonl'}:2: {message}\n"
    assert not (tmp_path / "ds").exists()


def test_a_file_read_on_every_cpu_names_the_same_lines(log, tmp_path, monkeypatch):
    """A large JSONL file is checked a part per CPU (here a few bytes a part, four CPUs): its
    faults and duplicates are named by the same file lines, and its rows counted the same."""
    monkeypatch.setattr(jsonl_parts, "PART_MIN_BYTES", 16)
    monkeypatch.setattr(jsonl_parts, "_cpus", lambda: 4)
    run = run_dir(tmp_path)
    rows = [json.loads(line) for line in (run / "trajectory_sft.jsonl").read_text().splitlines()]
    many = [{**rows[i % len(rows)], "episode_id": f"e-{i}"} for i in range(40)]
    write_jsonl(run / "trajectory_sft.jsonl", many + [many[3]])
    with pytest.raises(ArtifactError, match=r"trajectory_sft\.jsonl:41: duplicate trajectory episode e-3 \(first on line 4\)$"):
        import_path(log, run)
    (run / "trajectory_scores.jsonl").write_text('{"episode_id": "a--r000"}\n' * 30 + '{"episode_id": \n', encoding="utf-8")
    with pytest.raises(ArtifactError, match=r"trajectory_scores\.jsonl:31: not valid JSON"):
        import_path(log, run)
    (run / "trajectory_scores.jsonl").write_text('{"episode_id": "a--r000"}\n' * 30, encoding="utf-8")
    write_jsonl(run / "trajectory_sft.jsonl", many)
    import_path(log, run)
    counted = log.sql("SELECT kind, rows FROM imported_files WHERE kind LIKE 'trajectory_%' ORDER BY kind").to_pylist()
    assert counted == [{"kind": "trajectory_scores", "rows": 30}, {"kind": "trajectory_sft", "rows": 40}]


@pytest.mark.parametrize(
    "rows, message",
    [
        ([{"case_id": "a", "split": "test", "split_group_id": "g"}], r"split\.jsonl:1: fixed case split rows require case_id"),
        ([{"case_id": "a", "split": "train"}], r"split\.jsonl:1: fixed case split rows require"),
        ([{"case_id": "a", "split": "train", "split_group_id": "g"}, {"case_id": "a", "split": "train", "split_group_id": "g"}],
         r"split\.jsonl:2: duplicate fixed case split case_id: a"),
        ([], "fixed case split is empty"),
    ],
)
def test_case_split_rows_are_checked(log, tmp_path, rows, message):
    with pytest.raises(ArtifactError, match=message):
        import_path(log, write_jsonl(tmp_path / "split.jsonl", rows))


def test_gate_artifacts_need_an_episode_id_each_once(log, tmp_path):
    run = run_dir(tmp_path)
    gates = write_eligibility(tmp_path / "gates", run, [("a--r000", "a")])
    (gates / "nested").mkdir()
    (gates / "nested" / "again.sft_eligibility.json").write_text(json.dumps({"episode_id": "a--r000"}))
    with pytest.raises(ArtifactError, match="duplicate gate artifact episode_id: a--r000"):
        import_path(log, gates)
    (gates / "nested" / "again.sft_eligibility.json").write_text(json.dumps({"rollout": {}}))
    with pytest.raises(ArtifactError, match="gate artifact lacks episode_id"):
        import_path(log, gates)
    (gates / "nested" / "again.sft_eligibility.json").write_text(json.dumps({"rollout": {"episode_id": "b--r000"}}))
    result = import_path(log, gates)
    assert result.source_kind == "gate_artifacts" and result.files == 2


def test_the_cli_imports_several_paths_and_errors_in_one_line(log, tmp_path):
    run = run_dir(tmp_path)
    split = write_case_split(tmp_path / "split.jsonl", {"a": ("train", "g1")})
    runner = CliRunner()
    result = runner.invoke(cli, ["--db", str(log.path), "import", str(run), str(split), "--format", "jsonl"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert [(r["source_kind"], r["status"]) for r in rows] == [("run_dir", "imported"), ("case_split", "imported")]
    (tmp_path / "junk").mkdir()
    result = runner.invoke(cli, ["--db", str(log.path), "import", str(tmp_path / "junk")])
    assert result.exit_code == 2 and result.output.startswith("Error: cannot tell what") and result.output.count("\n") == 1


def test_one_source_named_twice_is_refused_in_the_users_words(log, tmp_path):
    """A directory named twice, or a copy of it (the same bytes: one import), was refused naming
    the internal import id as "named twice"; now the flags as typed."""
    import shutil

    run = run_dir(tmp_path)
    shutil.copytree(run, tmp_path / "copy")
    for second in (run, tmp_path / "copy"):
        result = CliRunner().invoke(cli, ["--db", str(log.path), "dataset", "export", "--run-dir", str(run), "--run-dir", str(second),
                                          "--out", str(tmp_path / "out")])
        import_id = import_path(log, run).import_id
        assert (result.exit_code, result.output) == (
            2, f"Error: --run-dir {run} and --run-dir {second} name the same source ({import_id}, the same files): name it once\n")


def test_a_run_directory_moved_since_its_import_is_named_where_the_export_was_given_it(log, tmp_path):
    """The same files at a new path are the import the log holds (recorded at the old path);
    seed 002 names a source's files by the path it is given: so does the export, in the
    manifest's source_runs, each row's source_trace and the metadata files, while a log query
    still shows where the files were imported from."""
    import shutil

    old = run_dir(tmp_path)
    import_path(log, old)
    moved = tmp_path / "moved" / "run-a"
    shutil.copytree(old, moved)
    shutil.rmtree(old)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["--db", str(log.path), "dataset", "export", "--run-dir", str(moved), "--out", str(out)])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert [s["path"] for s in manifest["source_runs"]] == [str(moved)]
    metadata = [json.loads(line) for name in ("episode_metadata.jsonl", "excluded_episode_metadata.jsonl")
                for line in (out / name).read_text().splitlines()]
    assert sorted(m["source_trace"] for m in metadata) == [f"{moved}/traces/a--r000.json", f"{moved}/traces/b--r000.json"]
    assert str(old) not in "".join(p.read_text() for p in out.iterdir())
    assert log.sql("SELECT path FROM import_sources")["path"].to_pylist() == [str(old)]
