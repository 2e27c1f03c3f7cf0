"""Shared by the Python tests: the built touchstone CLI (env TOUCHSTONE_CLI, set by ctest), the
package on sys.path, and the sageattention stand-in where a test asks for it."""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)  # block_model, user_kernels
STAND_IN = os.path.join(HERE, "sageattention_stand_in")
# touchstone.testing's fixtures (tiny_fixture, ...) and --touchstone-reports (docs/python.md).
pytest_plugins = ["touchstone.pytest_plugin"]


def _cli():
    exe = os.environ.get("TOUCHSTONE_CLI") or os.path.join(ROOT, "build", "touchstone")
    if not os.access(exe, os.X_OK):
        pytest.exit(f"no touchstone binary at {exe}: build it and set TOUCHSTONE_CLI", returncode=2)
    return exe


class CLI:
    def __init__(self, exe):
        self.exe = exe

    def __call__(self, *args, expect=0):
        r = subprocess.run([self.exe, *map(str, args)], capture_output=True, text=True)
        if expect is not None and r.returncode != expect:
            raise AssertionError(f"touchstone {' '.join(map(str, args))}: exit {r.returncode}, "
                                 f"expected {expect}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
        return r

    def json(self, *args, expect=0):
        return json.loads(self(*args, "--json", expect=expect).stdout)


@pytest.fixture(scope="session")
def ts():
    return CLI(_cli())


def python_module(*args, env=None):
    """python3 -m touchstone ARGS in a fresh interpreter (the command line as users run it)."""
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "python"), HERE] + list(env or []))
    return subprocess.run([sys.executable, "-m", "touchstone", *map(str, args)],
                          capture_output=True, text=True, env=e)


@pytest.fixture
def extension():
    """Tests of the in-process API need touchstone._core: where the build made one
    (TOUCHSTONE_REQUIRE_EXTENSION=1, set by ctest), its absence fails them; elsewhere (an
    interpreter the extension was not built for) they are skipped, saying why."""
    from touchstone import _native

    if _native.core() is None:
        why = f"no touchstone._core for {sys.executable}: {_native.why_not()}"
        if os.environ.get("TOUCHSTONE_REQUIRE_EXTENSION") == "1":
            pytest.fail(why)
        pytest.skip(why)
