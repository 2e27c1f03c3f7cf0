"""A missing Python dependency is one line naming the package and how to install it, exit 2,
never a traceback."""
import os
import shutil
import subprocess
import sys

import pytest

from conftest import HERE, ROOT

_BLOCK = ("import sys, runpy\nfor m in sys.argv[1].split(','):\n    sys.modules[m] = None\n"
          "sys.argv = ['python3 -m touchstone'] + sys.argv[2:]\n"
          "runpy.run_module('touchstone', run_name='__main__', alter_sys=True)\n")


def _run(python, args, block=None):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    cmd = [python, "-c", _BLOCK, block, *args] if block else [python, "-m", "touchstone", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=HERE)


def _one_line(r, package):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert f"the Python package '{package}' is missing" in r.stderr
    assert f"apt-get install python3-{package}" in r.stderr


def test_without_numpy_help_is_one_line():
    _one_line(_run(sys.executable, ["--help"], block="numpy"), "numpy")


def test_without_h5py_help_and_replay_are_one_line(tmp_path):
    _one_line(_run(sys.executable, ["--help"], block="h5py"), "h5py")
    f = tmp_path / "f.h5"
    f.write_bytes(b"")
    _one_line(_run(sys.executable, ["replay", str(f), "--kernel", "torch_exact_fp64"], block="h5py"),
              "h5py")


def test_without_torch_replay_is_one_line(tmp_path):
    f = tmp_path / "f.h5"
    f.write_bytes(b"")
    _one_line(_run(sys.executable, ["replay", str(f), "--kernel", "torch_exact_fp64"], block="torch"),
              "torch")


def test_another_python3_on_path_lacking_the_packages():
    """The first python3 on PATH other than this one (pyenv's on the development machine),
    where it lacks numpy or h5py."""
    others = [p for p in (shutil.which("python3"),) if p and os.path.realpath(p) != os.path.realpath(sys.executable)]
    if not others:
        pytest.skip("no other python3 on PATH")
    probe = subprocess.run([others[0], "-c", "import numpy, h5py"], capture_output=True)
    if probe.returncode == 0:
        pytest.skip(f"{others[0]} has numpy and h5py")
    r = _run(others[0], ["--help"])
    missing = "numpy" if b"numpy" in probe.stderr else "h5py"
    _one_line(r, missing)
