"""touchstone's pytest plugin (docs/python.md "pytest"): fixtures that synthesize or load a
fixture, and --touchstone-reports DIR, which writes each assert_gate's JUnit XML and HTML report
there (DIR/<test>.junit.xml, DIR/<test>.html; a test's second gate run adds -2, ...) for CI to keep as artefacts.

Enable it with `pytest -p touchstone.pytest_plugin`, or `pytest_plugins = ["touchstone.pytest_plugin"]`
in a conftest.py; a pip-installed package registers it by itself (entry point pytest11)."""
import os

import pytest

from . import api, testing


def pytest_addoption(parser):
    group = parser.getgroup("touchstone")
    group.addoption("--touchstone-reports", metavar="DIR", default=None,
                    help="write each assert_gate's JUnit XML and HTML report into DIR")


def pytest_configure(config):
    d = config.getoption("--touchstone-reports", default=None)
    testing.report_dir = os.path.abspath(d) if d else None


def pytest_runtest_setup(item):
    testing.current_test = item.name


def pytest_runtest_teardown(item):
    testing.current_test = None


@pytest.fixture(scope="session")
def touchstone_synth(tmp_path_factory):
    """synth(preset="tiny", seed=0, **options) -> the path of a synthetic fixture (the C++
    generator), made once per session for each set of arguments."""
    made = {}

    def synth(preset="tiny", seed=0, **options):
        key = (preset, seed, tuple(sorted(options.items())))
        if key not in made:
            folder = tmp_path_factory.mktemp(f"touchstone-{preset}")
            made[key] = api.synthesize(folder / f"{preset}_{seed}.h5", preset, seed=seed, **options)
        return made[key]

    return synth


@pytest.fixture(scope="session")
def tiny_fixture(touchstone_synth):
    """A synthetic `tiny` fixture (seconds to gate on 2 cores)."""
    return touchstone_synth("tiny")


@pytest.fixture(scope="session")
def ci_fixture(touchstone_synth):
    """A synthetic `ci` fixture (the CI preset: a few seconds a gate)."""
    return touchstone_synth("ci")


@pytest.fixture
def touchstone_load():
    """load(path) -> touchstone.Fixture of a validated fixture (CaptureError naming what is wrong)."""
    def load(path):
        from .fixture_io import read_fixture

        if api.extension_available():
            api.validate_fixture(path)
        return read_fixture(os.fspath(path))

    return load
