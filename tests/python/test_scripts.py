"""scripts/ holds the tools a user or maintainer runs and benchmarks/ the experiments (README.md,
"Developers"): each answers --help with exit 0, its usage and (for scripts/) an example, and
touches nothing doing so."""
import os
import subprocess

import pytest

from conftest import ROOT


def _runnable(folder):
    d = os.path.join(ROOT, folder)
    return sorted(os.path.join(d, f) for f in os.listdir(d)
                  if os.path.isfile(os.path.join(d, f)) and os.access(os.path.join(d, f), os.X_OK))


SCRIPTS = _runnable("scripts")
BENCHMARKS = _runnable("benchmarks")


def test_there_are_scripts_and_benchmarks():
    names = {os.path.basename(p) for p in SCRIPTS}
    assert {"ci", "install-deps", "python-tables"} <= names
    assert BENCHMARKS


@pytest.mark.parametrize("path", SCRIPTS + BENCHMARKS,
                         ids=lambda p: os.path.relpath(p, ROOT))
def test_help_says_what_and_how_and_touches_nothing(path, tmp_path):
    r = subprocess.run([path, "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, OUT=str(tmp_path / "out"), WORK=str(tmp_path / "work")))
    assert r.returncode == 0, r.stderr
    text = r.stdout.lower()
    assert "usage" in text, r.stdout
    if os.path.dirname(path).endswith("scripts"):
        assert "example" in text, r.stdout
    assert list(tmp_path.iterdir()) == [], "--help wrote files"
