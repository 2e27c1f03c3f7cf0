"""python3 -m touchstone's usage and input errors: one line on stderr, exit 2, as the C++ CLI
gives them (a review found argparse's usage block and an internal error for a bad .npz)."""
import pytest

from conftest import python_module


@pytest.mark.parametrize("args, want", [
    (["replay"], "the following arguments are required"),
    (["replay", "f.h5", "--kernel", "x", "--bogus"], "unrecognized arguments: --bogus"),
    (["from-npz"], "the following arguments are required"),
])
def test_usage_errors_are_one_line_and_exit_2(args, want):
    r = python_module(*args)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and want in r.stderr, r.stderr


def test_a_file_that_is_no_npz_is_bad_input_not_an_internal_error(tmp_path):
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"\x00not an npz file\xff" * 8)
    r = python_module("from-npz", junk, "-o", tmp_path / "f.h5", "--model", "m")
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and "not a readable .npz file" in r.stderr, r.stderr
    assert not (tmp_path / "f.h5").exists()
