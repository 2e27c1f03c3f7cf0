"""docs/ci.md's example test file is tests/python/ci_example.py, verbatim, and it passes as the
documented CI job runs it, writing the JUnit and HTML artefacts."""
import os
import shutil
import subprocess
import sys

from conftest import HERE, ROOT


def test_the_docs_show_the_example_file_verbatim():
    with open(os.path.join(ROOT, "docs", "ci.md")) as fh:
        doc = fh.read()
    with open(os.path.join(HERE, "ci_example.py")) as fh:
        example = fh.read()
    assert example in doc, "docs/ci.md must hold tests/python/ci_example.py verbatim"


def test_the_example_passes_as_the_ci_job_runs_it(tmp_path, extension):
    shutil.copy(os.path.join(HERE, "ci_example.py"), tmp_path / "test_kernel.py")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-p", "touchstone.pytest_plugin", "--touchstone-reports", "reports",
                        "--junitxml", "pytest.xml", "test_kernel.py"],
                       capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "2 passed" in r.stdout
    reports = sorted(os.listdir(tmp_path / "reports"))
    assert reports == ["test_my_attention_against_the_hopper_preset.html",
                       "test_my_attention_against_the_hopper_preset.junit.xml",
                       "test_my_attention_is_sage_like.html",
                       "test_my_attention_is_sage_like.junit.xml"], reports
    assert (tmp_path / "pytest.xml").is_file()
