"""The README's Python example runs as printed, from any folder, the repository root included
(where the source `eviscene/` comes first on sys.path)."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _readme_python_block() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    return block


def test_the_source_tree_imports_whole_from_the_repository_root():
    probe = "import eviscene.sql, eviscene.cli.main, eviscene.schema; from eviscene.views import view_definitions; print(len(view_definitions()))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert int(done.stdout) > 30


def test_readme_python_example_runs_against_a_real_log(offline_run, tmp_path):
    log, summary = offline_run
    shutil.copy(log.path, tmp_path / "eviscene.duckdb")
    done = subprocess.run([sys.executable, "-c", _readme_python_block()], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    run_id, status, unfinished = done.stdout.split()
    assert (run_id, status, unfinished) == (summary.run_id, "completed", "0")
