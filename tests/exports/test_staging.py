"""`staged_directory(..., replace=True)` swaps a folder for a new one only once the new one is
whole: a failure while writing it, or in the swap itself, leaves the earlier folder where it
was, byte for byte, and no temporary folder beside it."""

from __future__ import annotations

import errno
import hashlib
import os
import socket
import subprocess
from pathlib import Path

import pytest

from eviscene.errors import EvisceneError
from eviscene.exports import staging as staging_module
from eviscene.exports.staging import staged_directory


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture()
def earlier(tmp_path) -> Path:
    """A run directory already written: two files, one in a subfolder."""
    out = tmp_path / "runs" / "r"
    (out / "traces").mkdir(parents=True)
    (out / "run_manifest.json").write_bytes(b'{"run_id":"r","status":"completed"}\n')
    (out / "traces" / "e1.json").write_bytes(b"old trace")
    return out


def test_a_replacement_takes_the_place_of_the_earlier_folder(earlier):
    with staged_directory(earlier, replace=True) as staging:
        (staging / "run_manifest.json").write_bytes(b"new")
    assert tree(earlier) == {"run_manifest.json": b"new"}
    assert os.listdir(earlier.parent) == ["r"]  # neither the old folder nor the temporary one


def test_a_write_that_fails_leaves_the_earlier_folder_as_it_was(earlier):
    before = tree(earlier)
    with pytest.raises(EvisceneError, match=f"cannot write {earlier}/summary.json: No space left on device"):
        with staged_directory(earlier, replace=True) as staging:
            (staging / "run_manifest.json").write_bytes(b"new")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(staging / "summary.json"))
    assert tree(earlier) == before
    assert os.listdir(earlier.parent) == ["r"]


def test_a_swap_that_fails_puts_the_earlier_folder_back(earlier, monkeypatch):
    """The new folder cannot be renamed in (here: refused, as a full or read-only disk
    would): the earlier one, already renamed aside, goes back to its place."""
    before = tree(earlier)
    rename = os.rename

    def refuse_the_new_folder(source, target):
        if Path(source).name.startswith(".r.partial-"):
            raise OSError(errno.EACCES, os.strerror(errno.EACCES), str(source))
        rename(source, target)

    monkeypatch.setattr(staging_module.os, "rename", refuse_the_new_folder)
    with pytest.raises(EvisceneError, match=f"cannot write {earlier}: Permission denied"):
        with staged_directory(earlier, replace=True) as staging:
            (staging / "run_manifest.json").write_bytes(b"new")
    assert tree(earlier) == before
    assert os.listdir(earlier.parent) == ["r"]


def test_without_replace_a_folder_in_the_way_is_still_refused(earlier):
    with pytest.raises(EvisceneError, match=f"output directory must be new or empty: {earlier}"):
        with staged_directory(earlier):
            pass


def test_a_killed_writes_leftover_goes_at_the_next_write_and_nothing_else_does(tmp_path):
    """A temporary folder whose writer, on this host, no longer runs (killed mid-write) is
    removed by the next write to the same path; a live writer's, another host's, another
    path's and a folder set aside by a swap stay."""
    host = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]
    finished = subprocess.Popen(["true"])
    finished.wait()
    gone_pid = finished.pid
    names = {
        "killed": f".r.partial-{host}-{gone_pid}-0123456789ab",
        "live": f".r.partial-{host}-{os.getpid()}-0123456789ab",
        "other host": f".r.partial-00000000-{gone_pid}-0123456789ab",
        "other path": f".q.partial-{host}-{gone_pid}-0123456789ab",
        "set aside": f".r.replaced-{host}-{gone_pid}-0123456789ab",
    }
    for name in names.values():
        (tmp_path / name).mkdir()
        (tmp_path / name / "half.jsonl").write_bytes(b"{")
    with staged_directory(tmp_path / "r") as staging:
        (staging / "run_manifest.json").write_bytes(b"{}")
    assert sorted(os.listdir(tmp_path)) == sorted({"r", *names.values()} - {names["killed"]})



def test_a_folder_another_write_filled_meanwhile_is_kept_and_said_so(tmp_path):
    """Two writes to one new path at once: the one finishing second said only
    `cannot write mat: Directory not empty`. It now says what happened; the first's stays."""
    out = tmp_path / "mat"
    with pytest.raises(EvisceneError) as raised:
        with staged_directory(out, "--out folder") as staging:
            (staging / "mine.json").write_bytes(b"second")
            out.mkdir()
            (out / "theirs.json").write_bytes(b"first")  # the other write, renamed in first
    assert str(raised.value) == (f"--out folder {out} was filled while this write ran (another write to it, finished first?); "
                                 "it is kept as it is and this write's output removed")
    assert tree(out) == {"theirs.json": b"first"}
    assert os.listdir(tmp_path) == ["mat"]


def test_an_output_folder_under_a_file_says_a_file_is_in_the_way(tmp_path):
    """`--out afile/sub` said `cannot write afile: File exists`, naming no folder to be made."""
    (tmp_path / "afile").write_text("hi")
    with pytest.raises(EvisceneError) as raised:
        with staged_directory(tmp_path / "afile" / "sub"):
            pass
    assert str(raised.value) == f"cannot write {tmp_path / 'afile'}: a file is there, where a folder was to be made"


def test_a_path_whose_dotdot_steps_out_of_no_folder_is_refused_before_anything_is_made(tmp_path):
    """`runs/new/..` with `runs/new` missing passed the new-or-empty check (the system finds
    nothing there), then the write made `runs/new` for its temporary sibling, which turned the
    path into `runs` itself: the rename onto it always failed, blamed on another write, and
    `runs` was never checked for being empty. Such a path is now refused before anything is made."""
    runs = tmp_path / "runs"
    (runs / "afile").parent.mkdir()
    (runs / "afile").write_text("mine")
    for out, above, why in ((runs / "new" / "..", runs / "new", "does not exist"),
                            (runs / "afile" / ".." / "x", runs / "afile", "is not a folder")):
        for replace in (False, True):
            with pytest.raises(EvisceneError) as raised:
                with staged_directory(out, replace=replace):
                    pass
            assert str(raised.value) == (f"output directory {out}: its '..' steps out of {above}, which {why}, "
                                         "so the path names no folder; write it without the '..'")
    assert os.listdir(runs) == ["afile"]
    # a '..' out of a folder that is there names the folder the system finds: written, and checked, as that one
    (runs / "sub").mkdir()
    with staged_directory(runs / "sub" / ".." / "x") as staging:
        (staging / "run_manifest.json").write_bytes(b"{}")
    assert tree(runs / "x") == {"run_manifest.json": b"{}"}
    with pytest.raises(EvisceneError) as raised:
        with staged_directory(runs / "sub" / ".."):
            pass
    assert str(raised.value) == f"output directory must be new or empty: {runs / 'sub' / '..'}"


def test_an_output_folder_that_is_a_link_is_refused_and_what_it_leads_to_is_left_alone(tmp_path):
    """A link to an empty folder passed the new-or-empty check (which followed it), then the
    write's rename onto the link failed at the very end: `cannot write …: Not a directory`
    (and a link to a folder being replaced was renamed aside itself, not what it leads to).
    Output folders are put in place whole, never through a link: refused before the write."""
    (tmp_path / "exp42").mkdir()
    link = tmp_path / "latest"
    link.symlink_to("exp42")
    dangling = tmp_path / "gone"
    dangling.symlink_to("nowhere")
    for out, target in ((link, "exp42"), (dangling, "nowhere")):
        for replace in (False, True):
            with pytest.raises(EvisceneError) as raised:
                with staged_directory(out, "--out folder", replace=replace):
                    pass
            assert str(raised.value) == (f"--out folder {out} is a link (to {target}); an output folder is put in place whole, "
                                         "never through a link: name the folder itself")
    assert sorted(os.listdir(tmp_path)) == ["exp42", "gone", "latest"] and not os.listdir(tmp_path / "exp42")
    assert os.readlink(link) == "exp42"
    # a link among the folders above the output folder is followed, as the system follows it
    (tmp_path / "real-runs").mkdir()
    (tmp_path / "runs").symlink_to("real-runs")
    with staged_directory(tmp_path / "runs" / "r") as staging:
        (staging / "run_manifest.json").write_bytes(b"{}")
    assert tree(tmp_path / "real-runs") == {"r/run_manifest.json": b"{}"}
