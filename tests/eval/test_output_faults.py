"""Faults are one line and lose nothing: a full disk (a real 1 MiB tmpfs, and a per-file
size limit `RLIMIT_FSIZE` in the child), a read-only folder, a folder that refuses writes,
a special file and a kill mid-write, met by real `eviscene` processes. Each ends with exit 2
and one line naming the path and the cause; the output path is left as it was (a rerun
succeeds), and the log still verifies."""

from __future__ import annotations

import filecmp
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from eviscene.events import RunFinished
from eviscene.log import EventLog
from eviscene.store import EventDraft

EVISCENE = str(Path(sys.executable).with_name("eviscene"))


def eviscene(log_path: Path, *args: str, file_size_limit: int | None = None, cwd: Path | None = None):
    def limit() -> None:  # in the child: writes past the limit fail with EFBIG instead of killing it
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size_limit, file_size_limit))

    return subprocess.run([EVISCENE, "--db", str(log_path), *args], capture_output=True, text=True, timeout=600,
                          preexec_fn=limit if file_size_limit else None, cwd=cwd)


def one_error_line(result, *fragments: str) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@contextmanager
def mounted(folder: Path, options: str):
    """A real tmpfs at `folder` (skipped where mounting is not permitted)."""
    folder.mkdir(parents=True, exist_ok=True)
    if shutil.which("mount") is None:
        pytest.skip("no mount command here")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or 'mount failed'}); needs root with CAP_SYS_ADMIN")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.fixture()
def run_log(offline_run, tmp_path) -> tuple[Path, str]:
    """A private copy of the shared offline run's log (sealed: one file)."""
    log, summary = offline_run
    copy = tmp_path / "log" / "run.duckdb"
    copy.parent.mkdir()
    shutil.copyfile(log.path, copy)
    return copy, summary.run_id


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir())


def test_materialize_on_a_full_disk_is_one_line_and_leaves_nothing_behind(run_log, tmp_path):
    log_path, run_id = run_log
    with mounted(tmp_path / "small", "size=1m") as small:
        result = eviscene(log_path, "materialize", run_id, "--out", str(small / "run"))
        one_error_line(result, f"cannot write {small / 'run'}", "No space left on device")
        assert leftovers(small) == []  # neither the run folder nor its temporary sibling
    clean = eviscene(log_path, "materialize", run_id, "--out", str(tmp_path / "clean"))
    assert clean.returncode == 0, clean.stderr


def test_materialize_past_the_file_size_limit_then_a_rerun_writes_the_same_bytes(run_log, tmp_path):
    log_path, run_id = run_log
    out = tmp_path / "out" / "run"
    result = eviscene(log_path, "materialize", run_id, "--out", str(out), file_size_limit=64 * 1024)
    one_error_line(result, f"cannot write {out}", "File too large")
    assert leftovers(out.parent) == []
    assert eviscene(log_path, "materialize", run_id, "--out", str(out)).returncode == 0
    assert eviscene(log_path, "materialize", run_id, "--out", str(tmp_path / "again")).returncode == 0
    compared = filecmp.dircmp(out, tmp_path / "again")
    assert not compared.diff_files and not compared.left_only and not compared.right_only


def test_materialize_into_a_read_only_folder(run_log, tmp_path):
    log_path, run_id = run_log
    with mounted(tmp_path / "ro", "ro,size=1m") as read_only:
        result = eviscene(log_path, "materialize", run_id, "--out", str(read_only / "run"))
        one_error_line(result, f"cannot write {read_only / 'run'}", "Read-only file system")


def test_materialize_into_a_folder_that_refuses_writes(run_log, tmp_path):
    log_path, run_id = run_log
    locked = tmp_path / "locked"
    locked.mkdir()
    # Tests run as root, which file modes do not stop; the immutable attribute does.
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(locked)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not supported on this filesystem")
    try:
        result = eviscene(log_path, "materialize", run_id, "--out", str(locked / "run"))
    finally:
        subprocess.run(["chattr", "-i", str(locked)], check=True)
    one_error_line(result, f"cannot write {locked / 'run'}", "Operation not permitted")
    assert leftovers(locked) == []


def test_materialize_onto_a_special_file(run_log):
    log_path, run_id = run_log
    result = eviscene(log_path, "materialize", run_id, "--out", "/proc/x")
    one_error_line(result, "cannot write /proc/x: ")


def test_dataset_export_past_the_file_size_limit(run_log, tmp_path):
    log_path, run_id = run_log
    out = tmp_path / "datasets" / "v1"
    result = eviscene(log_path, "dataset", "export", "--run", run_id, "--out", str(out), file_size_limit=16 * 1024)
    one_error_line(result, f"cannot write {out}", "File too large")
    assert leftovers(out.parent) == []
    done = eviscene(log_path, "dataset", "export", "--run", run_id, "--out", str(out))
    assert done.returncode == 0, done.stderr


def test_eval_run_on_a_full_disk_is_one_line_the_log_verifies_and_resume_finishes(release, tmp_path):
    cases = str(release / "runtime_input" / "cases.jsonl")
    # Room for the first commit (the run's opening and its gold, ~50 KiB on disk), not for
    # eight episodes' (~165 KiB).
    with mounted(tmp_path / "small", "size=96k") as small:
        log_path = small / "log.duckdb"
        result = eviscene(log_path, "eval", "run", "--benchmark", cases, "--limit", "8", "--no-progress", "--no-materialize")
        one_error_line(result, f"cannot write {log_path}.live/", ".parquet: No space left on device")
        assert not list(small.rglob(".*.tmp"))  # no half-written segment
        verified = eviscene(log_path, "log", "verify")  # intact, and the run named as unfinished
        assert verified.returncode == 1 and "every chain intact" in verified.stderr
        assert "UNFINISHED" in verified.stdout and f"eviscene --db {log_path} eval resume" in verified.stdout
        subprocess.run(["mount", "-o", "remount,size=64m", str(small)], check=True)
        run_id = next(p.name for p in Path(str(log_path) + ".live").iterdir() if p.is_dir())
        resumed = eviscene(log_path, "eval", "resume", run_id, "--no-progress")
        assert resumed.returncode == 0, resumed.stderr
        log = EventLog(log_path)
        assert log.verify().ok
        counts = log.sql("SELECT count(DISTINCT episode_id) FILTER (type = 'episode.finished') AS finished, "
                         "count(*) FILTER (type = 'run.finished') AS ended FROM events").to_pylist()
        assert counts == [{"finished": 8, "ended": 1}]


def test_eval_run_with_a_read_only_log_folder(release, tmp_path):
    with mounted(tmp_path / "ro", "ro,size=1m") as read_only:
        result = eviscene(read_only / "log.duckdb", "eval", "run", "--benchmark", str(release / "runtime_input" / "cases.jsonl"),
                          "--limit", "1", "--no-progress", "--no-materialize")
        one_error_line(result, f"cannot write {read_only}", "Read-only file system")


def test_a_reader_that_stops_reading_costs_the_run_nothing(release, tmp_path):
    """`eval run … | head -1`: the reader leaves (here before the first line); the run still
    writes its directory and ends as it would have, with no word about the pipe."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        ran = subprocess.run([EVISCENE, "--db", str(tmp_path / "log.duckdb"), "eval", "run", "--benchmark",
                              str(release / "runtime_input" / "cases.jsonl"), "--limit", "1", "--no-progress",
                              "--output-dir", "runs/r"], stdout=write_end, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                             timeout=600)
    finally:
        os.close(write_end)
    assert (ran.returncode, ran.stderr) == (0, "")
    assert (tmp_path / "runs" / "r" / "run_manifest.json").is_file()


def test_materialize_killed_mid_write_leaves_the_output_path_untouched(run_log, tmp_path):
    log_path, run_id = run_log
    out = tmp_path / "out" / "run"
    out.parent.mkdir()
    process = subprocess.Popen([EVISCENE, "--db", str(log_path), "materialize", run_id, "--out", str(out)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while process.poll() is None and not any(p.name.startswith(".run.partial-") for p in out.parent.iterdir()):
            time.sleep(0.0005)
        assert process.poll() is None, "materialize finished before it could be interrupted"
        time.sleep(0.05)  # some files written into the temporary folder
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait()
    assert not out.exists()  # a reader never sees half a run directory
    rerun = eviscene(log_path, "materialize", run_id, "--out", str(out))
    assert rerun.returncode == 0, rerun.stderr
    assert (out / "run_manifest.json").is_file()
    assert os.listdir(out.parent) == ["run"]  # the killed write's temporary folder went with the rerun


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_resume_killed_while_it_replaces_the_run_directory_leaves_the_earlier_one_byte_for_byte(release, tmp_path):
    """`eval resume` writes the run's own earlier directory again: the earlier one stays in
    place until the new one is whole, and the resume that finishes replaces it."""
    log_path = tmp_path / "log.duckdb"
    ran = eviscene(log_path, "eval", "run", "--benchmark", str(release / "runtime_input" / "cases.jsonl"), "--limit", "2",
                   "--no-progress", "--output-dir", "runs/r", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    out = tmp_path / "runs" / "r"
    (out / "summary.json").write_text('{"marked": "the earlier directory"}')
    earlier = files_of(out)
    resume = [EVISCENE, "--db", str(log_path), "eval", "resume", "r", "--no-progress", "--output-dir", "runs/r"]
    killed = subprocess.run(resume, env={**os.environ, "EVISCENE_FAULT": "staging.filled"}, cwd=tmp_path, capture_output=True, timeout=600)
    assert killed.returncode == -signal.SIGKILL  # the new directory written whole, not yet in place
    assert files_of(out) == earlier

    assert eviscene(log_path, *resume[3:], cwd=tmp_path).returncode == 0
    assert eviscene(log_path, "materialize", "r", "--out", str(tmp_path / "fresh")).returncode == 0
    assert files_of(out) == files_of(tmp_path / "fresh")  # replaced whole


def test_a_seal_on_a_full_disk_is_one_line_moves_nothing_and_a_rerun_seals(tmp_path):
    from eviscene.events import GateDecided
    from eviscene.store import EventDraft

    with mounted(tmp_path / "small", "size=3m") as small:
        log = EventLog(small / "log.duckdb")
        log.append("r1", [EventDraft(GateDecided(gate="g", subject=f"s{i}" * 20, passed=True), episode_id="e", attempt=1, step=i)
                          for i in range(3000)])
        segments = sorted(p.name for p in (small / "log.duckdb.live" / "r1").glob("events-*.parquet"))
        filler = small / "filler"
        free = shutil.disk_usage(small).free
        filler.write_bytes(b"\0" * (free - 160 * 1024))  # room for the archive's header, not for the run
        result = eviscene(log.path, "log", "seal")
        one_error_line(result, "could not seal run r1", "No space left on device", "nothing was moved", f"eviscene --db {log.path} log seal r1")
        assert sorted(p.name for p in (small / "log.duckdb.live" / "r1").glob("events-*.parquet")) == segments
        assert log.sql("SELECT count(*) AS n FROM events").to_pylist() == [{"n": 3000}]
        filler.unlink()
        assert eviscene(log.path, "log", "seal").stdout == "sealed 1 run(s): r1\n"
        assert not (small / "log.duckdb.live" / "r1").exists()
        assert log.sql("SELECT count(*) AS n, max(seq) AS last FROM events").to_pylist() == [{"n": 3000, "last": 3000}]


def test_a_run_whose_archive_cannot_be_written_reports_and_writes_its_run_directory_and_names_the_seal(release, tmp_path):
    """A run whose final seal failed on the archive (read only here; a full disk the same)
    printed only `Error: could not seal run b: ...` and exited 2: no summary and no run
    directory, though every episode had finished, and the `log seal` it named never writes
    that directory. Now the seal's failure is a note naming that command, as a busy archive's
    is, and the summary and run directory are read from the live segments."""
    log_path = tmp_path / "log.duckdb"
    cases = str(release / "runtime_input" / "cases.jsonl")
    assert eviscene(log_path, "eval", "run", "--benchmark", cases, "--limit", "1", "--no-progress", "--output-dir", "runs/a",
                    cwd=tmp_path).returncode == 0  # the archive exists, sealed
    # root opens a read-only file for writing all the same, unless it drops that capability
    bound = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-dac_override,-dac_read_search"]
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv, a read-only file stays writable")
    log_path.chmod(0o444)
    try:
        ran = subprocess.run([*(bound if os.geteuid() == 0 else []), EVISCENE, "--db", str(log_path), "eval", "run",
                              "--benchmark", cases, "--limit", "2", "--no-progress", "--output-dir", "runs/b"],
                             capture_output=True, text=True, timeout=600, cwd=tmp_path)
    finally:
        log_path.chmod(0o644)
    assert ran.returncode == 0, (ran.stdout, ran.stderr)
    assert ran.stderr == (f'run not sealed: could not seal run b: IO Error: Cannot open file "{log_path}": Permission denied; '
                          "nothing was moved (its live segments are kept and readable): fix that, then "
                          f"`eviscene --db {log_path} log seal b`\n")
    printed = ran.stdout.splitlines()
    assert printed[0] == "run b: 2 of 2 episodes ran (completed 2); status completed"
    assert printed[-1].startswith("run directory: runs/b (")
    assert json.loads((tmp_path / "runs" / "b" / "run_manifest.json").read_text())["status"] == "completed"
    assert eviscene(log_path, "log", "seal", "b").stdout == "sealed 1 run(s): b\n"  # as the note says
    assert EventLog(log_path).verify().ok


def test_a_path_python_reads_as_ascii_is_one_line_naming_the_cure(tmp_path):
    """Under LC_ALL=C with PYTHONUTF8=0 (and no locale coercion) a non-ASCII path reaches the
    program as undecodable text: reading a log there failed in DuckDB's ATTACH with
    `std::bad_cast`, a dataset export in orjson, each a traceback. Now one line says what to
    set, before anything is read or written."""
    folder = tmp_path / "n\u00f6"
    folder.mkdir()
    log = EventLog(folder / "log.duckdb")
    log.append("r1", [EventDraft(RunFinished(status="completed", completed_at="2026-12-06T08:00:00+00:00", num_episodes=0, num_errors=0))])
    assert log.seal() == ["r1"]  # an archive file to attach
    before = sorted(p.name for p in folder.iterdir())
    env = {**os.environ, "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    for args in (["runs"], ["dataset", "export", "--run", "r1", "--out", str(folder / "out")]):
        result = subprocess.run([EVISCENE, "--db", str(log.path), *args], capture_output=True, text=True, env=env, timeout=120,
                                check=False)
        one_error_line(result, "is not text this Python can read", "PYTHONUTF8=1")
    # the default log, in a working directory of that name
    result = subprocess.run([EVISCENE, "runs"], capture_output=True, text=True, env=env, timeout=120, cwd=folder, check=False)
    one_error_line(result, "is not text this Python can read", "PYTHONUTF8=1")
    assert sorted(p.name for p in folder.iterdir()) == before


def test_a_name_that_is_not_utf8_is_said_to_be_so_not_blamed_on_the_locale(tmp_path):
    """A folder named in Latin-1 (`caf\xe9`) got the advice to set PYTHONUTF8=1 or a UTF-8
    locale, already set and no help: the bytes are what is wrong."""
    folder = os.path.join(os.fsencode(tmp_path), b"caf\xe9")
    os.mkdir(folder)
    for env in ({**os.environ, "LC_ALL": "C.UTF-8"}, {**os.environ, "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}):
        result = subprocess.run([EVISCENE, "views"], capture_output=True, text=True, env=env, timeout=120, cwd=folder, check=False)
        assert one_error_line(result, "is not UTF-8 text (byte 0xe9), which the log and its files hold only; rename it").endswith(
            "caf\\udce9' is not UTF-8 text (byte 0xe9), which the log and its files hold only; rename it, "
            "or name it through a link whose name is UTF-8")


def test_the_folder_a_command_runs_in_is_never_an_output_folder(offline_run, release, tmp_path, monkeypatch):
    """`--out .` in an empty folder: the export replaced the folder the shell stood in (its inode
    changed, the shell left in a deleted folder); `eval run --output-dir .` ran every episode,
    then failed to rename its run directory onto `.`. Each is now refused before it starts."""
    from click.testing import CliRunner

    from eviscene.cli.main import cli
    from eviscene.errors import EvisceneError
    from eviscene.exports.staging import staged_directory

    log, summary = offline_run
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    inode = here.stat().st_ino
    for command in (
        ["dataset", "export", "--run", summary.run_id, "--out", ".", "--allow-training-prohibited"],
        ["materialize", summary.run_id, "--out", "."],
        # before any episode (named: unnamed, `.` is refused as no folder's name to name the run after)
        ["eval", "run", "--benchmark", str(release / "runtime_input" / "cases.jsonl"), "--output-dir", ".", "--run-id", "here"],
    ):
        result = CliRunner().invoke(cli, ["--db", str(log.path), *command])
        assert result.exit_code == 2, (command, result.output)
        assert "is the folder this command runs in, which would be replaced whole" in result.output
        assert here.stat().st_ino == inode and not any(here.iterdir())
    with pytest.raises(EvisceneError, match="is the folder this command runs in"):
        with staged_directory(Path("."), replace=True):  # a resume's run directory written again
            pass
    # a resume writing its own run directory again, from inside it (or a folder inside it): refused before it runs
    own = tmp_path / "own"
    assert CliRunner().invoke(cli, ["--db", str(log.path), "materialize", summary.run_id, "--out", str(own)]).exit_code == 0
    for inside, out in ((own, "."), (own / "traces", "..")):
        monkeypatch.chdir(inside)
        result = CliRunner().invoke(cli, ["--db", str(log.path), "eval", "resume", summary.run_id, "--output-dir", out])
        assert result.exit_code == 2 and f"--output-dir {out} is the folder this command runs in" in result.output, result.output
