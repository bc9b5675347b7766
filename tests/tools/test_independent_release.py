"""scripts/make_independent_release.py writes a loadable release in the bundled format,
byte for byte the same for the same seed, with labels in equal shares."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections import Counter
from pathlib import Path

from eviscene.release import load_cases, load_release
from eviscene.release.gold import load_gold

GENERATOR = Path(__file__).resolve().parents[2] / "scripts" / "make_independent_release.py"


def generate(out: Path, seed: int) -> dict[str, str]:
    subprocess.run([sys.executable, str(GENERATOR), "--out", str(out), "--cases", "4", "--seed", str(seed)], check=True,
                   capture_output=True)
    return {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.rglob("*")) if p.is_file()}


def test_the_release_loads_and_reproduces(tmp_path):
    first = generate(tmp_path / "a", 3)
    assert generate(tmp_path / "b", 3) == first
    assert generate(tmp_path / "c", 4) != first
    release = load_release(tmp_path / "a" / "runtime_input" / "cases.jsonl")
    cases = load_cases(release)
    gold = load_gold(release)
    assert len(cases) == 4 and set(gold) == {case.case_id for case in cases}
    assert Counter(row["label"] for row in gold.values()) == Counter(["authentic", "out_of_context", "manipulated", "unverifiable"])


def test_bad_case_count_is_one_clear_line(tmp_path):
    result = subprocess.run([sys.executable, str(GENERATOR), "--out", str(tmp_path / "x"), "--cases", "0"], capture_output=True, text=True)
    assert result.returncode == 2 and result.stderr.strip() == "Error: --cases must be at least 1"
