"""Inputs are checked before the first episode: a broken gold or protocol file, a case
without gold, an empty selection or an unusable output folder is one line, exit 2, and no
run is started. An episode that finished is never lost because something later failed."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

from eviscene.cli.main import cli
from eviscene.errors import EvisceneError, ReleaseError
from eviscene.eval import run as run_module
from eviscene.eval.options import EvalOptions
from eviscene.eval.preflight import check_case_pictures, check_recorded_endpoints
from eviscene.eval.run import resume_run, start_run
from eviscene.log import EventLog
from eviscene.release import Case, sha256_file
from eviscene.release.case_image import PictureFileTooLarge

BUNDLED = Path(__file__).resolve().parents[2] / "examples" / "eviscene-demo-v1"


@pytest.fixture()
def broken_release(tmp_path) -> Path:
    """A copy of the bundled release, for a test to break."""
    return Path(shutil.copytree(BUNDLED, tmp_path / "release"))


def gold_path(release: Path) -> Path:
    return release / "private" / "evaluation_gold.jsonl"


def run_cli(log_path: Path, release: Path, *flags: str):
    return CliRunner().invoke(
        cli, ["--db", str(log_path), "eval", "run", "--benchmark", str(release / "runtime_input" / "cases.jsonl"),
              "--no-progress", *flags],
    )


def assert_nothing_ran(result, log_path: Path, message: str) -> None:
    assert result.exit_code == 2, result.output
    # one line on stderr, nothing before it (not even a blank line), nothing on stdout
    assert result.stdout == "" and result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, result.output
    assert message in result.stderr, result.output
    live = Path(str(log_path) + ".live")
    assert not log_path.exists() and not (live.exists() and any(live.iterdir()))


def test_a_label_outside_the_label_set_stops_the_run_before_any_episode(broken_release, tmp_path):
    gold = gold_path(broken_release)
    lines = gold.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[2])
    row["label"] = "satire"
    lines[2] = json.dumps(row)
    gold.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run_cli(tmp_path / "log.duckdb", broken_release, "--limit", "1")
    assert_nothing_ran(result, tmp_path / "log.duckdb",
                       f"{gold}:3: case {row['case_id']!r} label 'satire' is not in the release label_set")


def test_a_truncated_gold_line_names_the_file_and_line(broken_release, tmp_path):
    gold = gold_path(broken_release)
    data = gold.read_bytes()
    gold.write_bytes(data[: len(data) - 40])  # the last row cut off mid-way
    last_line = data[: len(data) - 40].count(b"\n") + 1
    result = run_cli(tmp_path / "log.duckdb", broken_release, "--limit", "1")
    assert_nothing_ran(result, tmp_path / "log.duckdb", f"{gold}:{last_line}: malformed JSON")


def test_a_selected_case_without_gold_is_the_seeds_error(broken_release, tmp_path):
    gold = gold_path(broken_release)
    lines = gold.read_text(encoding="utf-8").splitlines()
    dropped = json.loads(lines[1])["case_id"]
    gold.write_text("\n".join(lines[:1] + lines[2:]) + "\n", encoding="utf-8")
    result = run_cli(tmp_path / "log.duckdb", broken_release)
    assert_nothing_ran(result, tmp_path / "log.duckdb", f"Error: {gold}: evaluation-gold rows missing runtime case IDs: {dropped}\n")


def test_a_truncated_protocol_names_the_file_and_line(broken_release, tmp_path):
    manifest = json.loads((broken_release / "manifest.json").read_text(encoding="utf-8"))
    protocol = broken_release / manifest["artifacts"]["classification_protocol"]
    protocol.write_text('{\n  "labels": [\n', encoding="utf-8")
    result = run_cli(tmp_path / "log.duckdb", broken_release, "--limit", "1")
    assert_nothing_ran(result, tmp_path / "log.duckdb", f"{protocol}:3: malformed JSON")
    protocol.write_text("[" * 50_000 + "]" * 50_000, encoding="utf-8")  # deeper than Python's recursion
    result = run_cli(tmp_path / "log.duckdb", broken_release, "--limit", "1")
    assert_nothing_ran(result, tmp_path / "log.duckdb", f"{protocol}: malformed JSON: nested too deeply")
    protocol.write_text('{"labels": ["authentic"], "labels": ["manipulated"]}', encoding="utf-8")  # each reader its own
    result = run_cli(tmp_path / "log.duckdb", broken_release, "--limit", "1")
    assert_nothing_ran(result, tmp_path / "log.duckdb", f"{protocol}: the key 'labels' appears twice in one object")


def test_a_policy_with_a_misspelled_key_stops_the_run_before_any_episode(broken_release, tmp_path):
    # Ignored, the misspelled keys would leave the run unguarded, and its audit by the same file blind to it.
    policy = broken_release / "private" / "source_access_policy.json"
    policy.write_text(json.dumps({"policy_id": "x", "blocked_domain": ["truthmeter.example"]}), encoding="utf-8")
    result = run_cli(tmp_path / "log.duckdb", broken_release, "--limit", "1")
    assert_nothing_ran(result, tmp_path / "log.duckdb",
                       f"{policy}: source access policy has unknown key(s) 'blocked_domain' (did you mean 'blocked_domains'?); "
                       "known keys: policy_id, blocked_domains, blocked_url_prefixes, blocked_content_sha256, cache_partition")


def test_a_policy_that_blocks_nothing_runs_as_the_seed_does_with_one_warning_at_the_start(broken_release, tmp_path):
    policy = broken_release / "private" / "source_access_policy.json"
    policy.write_text("{}", encoding="utf-8")
    result = run_cli(tmp_path / "log.duckdb", broken_release, "--limit", "1", "--no-materialize")
    assert result.exit_code == 0, result.output
    warning = (f"Warning: {policy}: the source access policy blocks nothing (no blocked_domains, blocked_url_prefixes "
               "or blocked_content_sha256); the agent may read the benchmark's answer pages\n")
    assert result.stderr.startswith(warning) and result.stderr.count("Warning:") == 1, result.stderr
    active = EventLog(tmp_path / "log.duckdb").sql("SELECT payload->'source_access_policy'->>'active' AS a FROM events "
                                                   "WHERE type = 'run.started'")["a"][0].as_py()
    assert active == "false"  # recorded as seed 000 records it


def test_a_release_naming_no_policy_runs_with_one_warning_at_the_start(broken_release, tmp_path):
    """No policy at all opened the benchmark's answer pages to the agent with no word said,
    where a policy blocking nothing was warned of."""
    manifest_path = broken_release / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    del manifest["artifacts"]["source_access_policy"]
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    result = run_cli(tmp_path / "log.duckdb", broken_release, "--limit", "1", "--no-materialize")
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith(
        "Warning: the release names no source access policy (its manifest's artifacts.source_access_policy) and "
        "--source-access-policy was not given: nothing is blocked; the agent may read the benchmark's answer pages\n"), result.stderr
    assert result.stderr.count("Warning:") == 1, result.stderr


@pytest.mark.parametrize("flags", [("--limit", "0"), ("--limit", "0", "--shard-count", "2", "--shard-index", "1")])
def test_an_empty_selection_is_an_error(release, tmp_path, flags):
    result = run_cli(tmp_path / "log.duckdb", release, *flags)
    assert_nothing_ran(result, tmp_path / "log.duckdb", "the selection is empty")


def test_a_cases_file_without_cases_says_so_rather_than_blaming_flags_not_given(broken_release, tmp_path):
    cases = broken_release / "runtime_input" / "cases.jsonl"
    cases.write_text("", encoding="utf-8")
    result = run_cli(tmp_path / "log.duckdb", broken_release)
    assert_nothing_ran(result, tmp_path / "log.duckdb", f"{cases} holds no cases: nothing to run")


def test_an_output_directory_that_is_not_empty_is_refused_before_any_episode(release, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine", encoding="utf-8")
    result = run_cli(tmp_path / "log.duckdb", release, "--limit", "1", "--output-dir", str(out))
    assert_nothing_ran(result, tmp_path / "log.duckdb", f"output directory must be new or empty: {out}")
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_an_output_directory_that_cannot_be_created_is_refused_before_any_episode(release, tmp_path):
    result = run_cli(tmp_path / "log.duckdb", release, "--limit", "1", "--output-dir", "/proc/eviscene-run")
    assert_nothing_ran(result, tmp_path / "log.duckdb", "cannot write /proc/eviscene-run: ")


def full_disk_at_the_end(name: str) -> None:
    if name == "run.episodes_ended":
        raise OSError(28, "No space left on device")


def test_finished_episodes_survive_a_failure_at_the_end_and_resume_completes_the_run(release, tmp_path, monkeypatch):
    """The run's end fails (a full disk), after the episodes finished."""
    log = EventLog(tmp_path / "log.duckdb")
    options = EvalOptions(benchmark=str(release / "runtime_input" / "cases.jsonl"), limit=3, concurrency=1)
    monkeypatch.setattr(run_module, "checkpoint", full_disk_at_the_end)
    with pytest.raises(OSError, match="No space left on device"):
        anyio.run(lambda: start_run(log, options, run_id="ends-badly"))
    finished = log.sql("SELECT count(*) AS n FROM events WHERE type = 'episode.finished'")["n"][0].as_py()
    assert finished == 3
    assert log.verify().ok
    monkeypatch.undo()
    summary = anyio.run(lambda: resume_run(log, "ends-badly"))
    assert summary.ran == 0 and summary.sealed
    counts = log.sql("SELECT type, count(*) AS n FROM events WHERE type IN ('episode.finished', 'run.finished', "
                     "'artifact.imported') GROUP BY type ORDER BY type").to_pylist()
    # The crash ended the run `failed` (as the seed marks a crashed run); the resume completed it.
    assert counts == [{"type": "artifact.imported", "n": 4}, {"type": "episode.finished", "n": 3},
                      {"type": "run.finished", "n": 2}]
    statuses = log.sql("SELECT payload->>'status' AS s FROM events WHERE type = 'run.finished' ORDER BY seq")["s"].to_pylist()
    assert statuses == ["failed", "completed"]
    assert log.sql("SELECT status FROM runs")["status"].to_pylist() == ["completed"]
    assert log.verify().ok


@pytest.mark.parametrize(
    ("flags", "refusal"),
    [
        ({"provider": "openai", "model": "m"}, None),  # openai's own key to openai's server
        ({"provider": "openai", "model": "m", "api_key_env": "AWS_SECRET_ACCESS_KEY"},
         ("run r: its recorded --base-url/--api-key-env would send the agent's key ($AWS_SECRET_ACCESS_KEY) to "
          "https://api.openai.com/v1; a resume sends a key only where the provider's defaults or your profile send it, since a "
          "log from elsewhere can name any server; if you started this run, resume it with --trust-endpoints")),
        ({"provider": "openai", "model": "m", "base_url": "https://collector.example/v1"},
         "would send the agent's key ($OPENAI_API_KEY) to https://collector.example/v1"),
        ({"provider": "openai_compatible", "model": "m", "base_url": "http://127.0.0.1:9/v1"}, None),  # sends no key
        ({"provider": "openai_compatible", "model": "m", "base_url": "http://127.0.0.1:9/v1", "api_key_env": "LAB_KEY"},
         "would send the agent's key ($LAB_KEY) to http://127.0.0.1:9/v1"),
        ({"image_access_mode": "separate_vlm", "vlm_provider": "openai", "vlm_model": "v"}, None),
        ({"image_access_mode": "separate_vlm", "vlm_provider": "openai", "vlm_model": "v", "vlm_base_url": "https://collector.example/v1"},
         "its recorded --vlm-base-url/--vlm-api-key-env would send the VLM's key ($OPENAI_API_KEY) to https://collector.example/v1"),
    ],
    ids=["provider-default", "other-variable", "other-server", "no-key", "own-flags", "vlm-default", "vlm-other-server"],
)
def test_a_resume_sends_a_key_only_where_the_users_own_configuration_sends_it(flags, refusal):
    """The endpoint flags a run recorded are the log's word, and a log may come from anyone."""
    options = EvalOptions(benchmark="cases.jsonl", **flags)
    if refusal is None:
        check_recorded_endpoints(options, "r")
    else:
        with pytest.raises(EvisceneError, match=re.escape(refusal)):
            check_recorded_endpoints(options, "r")


@pytest.mark.parametrize(
    ("flags", "restated", "refused"),
    [
        ({"executor": "ray"}, (), False),  # a local cluster of its own
        ({"executor": "ray", "ray_address": "auto"}, (), False),  # this machine's cluster
        ({"executor": "ray", "ray_address": "10.0.0.5:6379"}, (), True),
        ({"executor": "ray", "ray_address": "10.0.0.5:6379"}, ("ray_address",), False),  # given again by the user
        ({"executor": "local", "ray_address": "10.0.0.5:6379"}, (), False),  # not used
    ],
    ids=["local", "auto", "recorded", "restated", "unused"],
)
def test_a_resume_joins_a_ray_cluster_only_the_log_names_only_when_told_to(flags, restated, refused):
    """A cluster's answers are unpickled in the driver: one that only the log names could run
    code here."""
    options = EvalOptions(benchmark="cases.jsonl", **flags)
    if not refused:
        check_recorded_endpoints(options, "r", restated=restated)
        return
    with pytest.raises(EvisceneError) as refusal:
        check_recorded_endpoints(options, "r", restated=restated)
    assert str(refusal.value) == (
        "run r: its recorded --ray-address 10.0.0.5:6379 would run the episodes on that cluster, whose answers this "
        "process unpickles, and a log from elsewhere can name any; give --ray-address again, or if you started this "
        "run, resume it with --trust-endpoints"
    )


def test_a_resume_lets_tools_reach_private_addresses_only_when_told_to():
    options = EvalOptions(benchmark="cases.jsonl", search_backend="searxng", searxng_url="http://127.0.0.1:8888",
                          allow_private_network=True)
    with pytest.raises(EvisceneError, match=re.escape(
        "run r: its recorded --allow-private-network would let its tools reach this machine's and network's private "
        "addresses (cloud metadata among them), and a log from elsewhere can ask for that; if you started this run, "
        "resume it with --trust-endpoints"
    )):
        check_recorded_endpoints(options, "r")
    check_recorded_endpoints(options.model_copy(update={"allow_private_network": False}), "r")


def test_the_offline_agent_refuses_a_release_whose_label_set_lacks_one_of_its_verdicts(broken_release, tmp_path):
    """Over `label_set ["real", "fake"]` it turned every verdict into the last label, silently,
    and its SFT rows argued the opposite of their verdict."""
    manifest_path = broken_release / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["label_set"] = ["real", "fake"]
    manifest_path.write_text(json.dumps(manifest, indent=2))
    gold = [json.loads(line) for line in gold_path(broken_release).read_text().splitlines() if line.strip()]
    gold_path(broken_release).write_text("".join(
        json.dumps({**row, "label": "real" if row["label"] == "authentic" else "fake"}) + "\n" for row in gold))
    result = run_cli(tmp_path / "log.duckdb", broken_release)
    assert result.exit_code == 2 and result.output == (
        "Error: the embedded offline agent decides among authentic, out_of_context, manipulated, unverifiable; release "
        f"{manifest['release_id']}'s label set (real, fake) lacks authentic, out_of_context, manipulated, unverifiable: "
        "run it with a model (--provider, --profile)\n")
    assert not (tmp_path / "log.duckdb").exists()


def test_a_release_folder_given_as_the_benchmark_names_its_cases_file(tmp_path):
    ran = CliRunner().invoke(cli, ["--db", str(tmp_path / "log.duckdb"), "eval", "run", "--benchmark", str(BUNDLED),
                                   "--limit", "1", "--no-progress", "--no-materialize"])
    assert ran.exit_code == 0, ran.output
    manifest = EventLog(tmp_path / "log.duckdb").sql("SELECT payload->'benchmark'->>'path' AS p FROM events WHERE type = 'run.started'")
    assert manifest.to_pylist() == [{"p": str(BUNDLED / "runtime_input" / "cases.jsonl")}]
    elsewhere = CliRunner().invoke(cli, ["--db", str(tmp_path / "other.duckdb"), "eval", "run", "--benchmark", str(tmp_path)])
    assert elsewhere.exit_code == 2 and f"{tmp_path} is a folder with no runtime_input/cases.jsonl" in elsewhere.output
    # Its runtime_input folder and its manifest.json name it too (both were refused, the
    # manifest as `…/examples/manifest.json: release manifest not found`).
    from eviscene.cli.eval import eval_group

    for given in (BUNDLED / "runtime_input", BUNDLED / "manifest.json"):
        parsed = eval_group.commands["run"].make_context("run", ["--benchmark", str(given)]).params
        assert parsed["benchmark"] == str(BUNDLED / "runtime_input" / "cases.jsonl"), given


def test_the_library_takes_a_release_by_its_folder_as_the_cli_does(tmp_path):
    """`EvalOptions(benchmark=<release folder>)` said `<folder>: benchmark cases file not found`
    though the folder was there and `--benchmark` took it: only the CLI looked inside a folder."""
    log = EventLog(tmp_path / "log.duckdb")
    summary = anyio.run(start_run, log, EvalOptions(benchmark=str(BUNDLED), limit=1))
    assert (summary.planned, summary.ran, summary.status) == (1, 1, "completed")
    recorded = log.sql("SELECT payload->'benchmark'->>'path' AS p FROM events WHERE type = 'run.started'").to_pylist()
    assert recorded == [{"p": str(BUNDLED / "runtime_input" / "cases.jsonl")}]
    (tmp_path / "empty").mkdir()
    with pytest.raises(ReleaseError) as refused:
        anyio.run(start_run, EventLog(tmp_path / "other.duckdb"), EvalOptions(benchmark=str(tmp_path / "empty")))
    assert str(refused.value) == f"{tmp_path / 'empty'} is a folder with no runtime_input/cases.jsonl: give a release's cases file"


def test_a_release_whose_cases_file_leads_out_of_it_is_refused_before_anything_is_logged(broken_release, tmp_path):
    """The run resolved the cases path, links and all, before the release was found from it: a
    release whose cases.jsonl linked to another's ran that other release and imported its gold."""
    other = Path(shutil.copytree(BUNDLED, tmp_path / "other"))
    cases = broken_release / "runtime_input" / "cases.jsonl"
    cases.unlink()
    cases.symlink_to(other / "runtime_input" / "cases.jsonl")
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "log.duckdb"), "eval", "run", "--benchmark", str(broken_release),
                                      "--limit", "1", "--no-progress"])
    assert_nothing_ran(result, tmp_path / "log.duckdb",
                       f"Error: {cases}: benchmark cases file: path 'runtime_input/cases.jsonl' resolves to "
                       f"{other}/runtime_input/cases.jsonl, outside the release root {broken_release}\n")


def test_a_case_picture_file_over_the_size_limit_is_refused_before_anything_is_logged(broken_release, tmp_path):
    """A picture followed by padding decodes all the same, and its file was read whole (by the
    preflight, then by each episode): a sparse 3 GB "JPEG" (96 KB on disk) cost 3.6 GB of memory."""
    cases = broken_release / "runtime_input" / "cases.jsonl"
    rows = [json.loads(line) for line in cases.read_text(encoding="utf-8").splitlines() if line.strip()]
    os.truncate(broken_release / rows[0]["image_path"], 64 * 1024**2 + 1)  # sparse: a JPEG, then zeros
    rows[0]["image_sha256"] = sha256_file(broken_release / rows[0]["image_path"])
    cases.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    result = run_cli(tmp_path / "log.duckdb", broken_release, "--limit", "1")
    assert_nothing_ran(result, tmp_path / "log.duckdb",
                       f"Error: 1 case image(s) failed verification: {cases}:1: case {rows[0]['case_id']!r}: image "
                       f"{rows[0]['image_path']!r} is 67,108,865 bytes, above the file size limit of 67,108,864 bytes (64 MiB): "
                       "downscale or recompress it\n")


def test_the_preflight_decode_reads_no_picture_file_over_the_size_limit(tmp_path):
    """Its decode check read the file whole, whatever its size (a file grown after its hash was checked)."""
    picture = tmp_path / "a.jpg"
    picture.touch()
    os.truncate(picture, 64 * 1024**2 + 1)
    case = Case(case_id="a", image_path="images/a.jpg", image_file=picture, image_sha256="0" * 64, row="cases.jsonl:1")
    with pytest.raises(PictureFileTooLarge) as refused:
        check_case_pictures([case])
    assert str(refused.value) == f"{picture}: picture file is 67,108,865 bytes, above the file size limit of 67,108,864 bytes (64 MiB)"
