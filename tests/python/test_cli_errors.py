"""python3 -m touchstone's usage and input errors: one line on stderr, exit 2, as the C++ CLI
gives them (never argparse's usage block, never an internal error for a bad .npz)."""
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


def test_a_bad_config_file_is_named_in_its_one_line_error(tmp_path):
    import numpy as np

    npz = tmp_path / "a.npz"
    x = np.zeros((64, 2, 16), dtype=np.float32)
    np.savez(npz, q=x, k=x, v=x)
    (tmp_path / "broken.json").write_text('{"heads": 3')
    (tmp_path / "partial.json").write_text('{"heads": 3}')
    for cfg, want in (("broken.json", "broken.json: not JSON"), ("partial.json", "partial.json: config: missing"),
                      ("absent.json", "absent.json: No such file")):
        r = python_module("from-npz", npz, "-o", tmp_path / "f.h5", "--model", "m", "--config", tmp_path / cfg)
        assert r.returncode == 2, r.stderr
        assert r.stderr.count("\n") == 1 and want in r.stderr, r.stderr
    r = python_module("from-npz", npz, "-o", tmp_path / "f.h5", "--model", "m", "--frames", "-1")
    assert r.returncode == 2 and "frames=-1" in r.stderr, r.stderr
    assert not (tmp_path / "f.h5").exists()


def test_from_npz_onto_an_existing_fixture_names_its_own_flag(tmp_path):
    import numpy as np

    npz = tmp_path / "a.npz"
    x = np.zeros((64, 2, 16), dtype=np.float32)
    np.savez(npz, q=x, k=x, v=x)
    assert python_module("from-npz", npz, "-o", tmp_path / "f.h5", "--model", "m").returncode == 0
    r = python_module("from-npz", npz, "-o", tmp_path / "f.h5", "--model", "m")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "already exists" in r.stderr and "--force replaces it" in r.stderr, r.stderr
    assert "replace=True" not in r.stderr
    assert python_module("from-npz", npz, "-o", tmp_path / "f.h5", "--model", "m",
                         "--force").returncode == 0


def test_help_lists_every_subcommand_and_each_answers_help():
    r = python_module("--help")
    assert r.returncode == 0, r.stderr
    listed = r.stdout.split("positional arguments:")[1]
    for cmd in ("replay", "from-npz", "sage-fidelity", "scan"):
        assert f"\n    {cmd} " in listed, (cmd, r.stdout)
        sub = python_module(cmd, "--help")
        assert sub.returncode == 0 and "usage:" in sub.stdout, (cmd, sub.stdout, sub.stderr)


def test_from_npz_refuses_what_validate_refuses_and_names_its_own_flag(tmp_path, ts):
    """A NaN input and an array it would drop: refused before anything is written (exit 2, one
    line naming the array and the flag); --allow-nonfinite writes one that validate
    --allow-nonfinite accepts."""
    import numpy as np

    x = np.ones((64, 2, 16), dtype=np.float32)
    nan = x.copy()
    nan[3, 1, 5] = np.nan
    np.savez(tmp_path / "nan.npz", q=nan, k=x, v=x)
    np.savez(tmp_path / "extra.npz", q=x, k=x, v=x, obsreved=x)
    out = tmp_path / "f.h5"
    r = python_module("from-npz", tmp_path / "nan.npz", "-o", out, "--model", "m")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "/attention/q: 1 NaN/Inf value" in r.stderr and "[3, 1, 5]" in r.stderr, r.stderr
    assert "--allow-nonfinite" in r.stderr and "allow_nonfinite=True" not in r.stderr, r.stderr
    assert not out.exists()
    r = python_module("from-npz", tmp_path / "extra.npz", "-o", out, "--model", "m")
    assert r.returncode == 2 and "unknown array 'obsreved'" in r.stderr, r.stderr
    assert not out.exists()
    r = python_module("from-npz", tmp_path / "nan.npz", "-o", out, "--model", "m", "--allow-nonfinite")
    assert r.returncode == 0, r.stderr
    ts("fixture", "validate", out, expect=2)
    ts("fixture", "validate", out, "--allow-nonfinite")


def test_a_nonfinite_input_names_its_element_in_plain_integers():
    import numpy as np

    from touchstone.schema import NonFiniteInput

    # numpy 2 spells a list of its scalars [np.int64(3), ...]; the message is C++'s [3, 1, 5].
    e = NonFiniteInput("f.h5", "/attention/q", 1, [np.int64(3), np.int64(1), np.int64(5)])
    assert "(first at element [3, 1, 5]);" in str(e), str(e)
    assert e.first == [3, 1, 5] and all(type(i) is int for i in e.first)

    class Spelt(int):  # an integer whose repr names its type, as numpy 2's scalars do, on any numpy
        def __repr__(self):
            return f"Spelt({int(self)})"

    assert "(first at element [0, 7]);" in str(NonFiniteInput("f.h5", "/attention/k", 2, [Spelt(0), Spelt(7)]))


def test_write_fixture_refuses_a_bfloat16_nan_in_python_words(tmp_path):
    import numpy as np

    from touchstone import CaptureError, attention_config, write_fixture

    bits = np.full((64, 2, 16), 0x3F80, dtype=np.uint16)  # bfloat16 1.0
    bad = bits.copy()
    bad[0, 0, 1] = 0x7FC0  # bfloat16 NaN
    with pytest.raises(CaptureError, match=r"/attention/v: 1 NaN/Inf.*\[0, 0, 1\].*allow_nonfinite=True"):
        write_fixture(tmp_path / "f.h5", bits, bits, bad, attention_config(64, 2, 16),
                      model="m", bf16_bits=True)
    assert not (tmp_path / "f.h5").exists()


def test_from_npz_never_writes_over_its_own_npz_or_config(tmp_path):
    import numpy as np

    npz = tmp_path / "a.npz"
    x = np.zeros((64, 2, 16), dtype=np.float32)
    np.savez(npz, q=x, k=x, v=x)
    before = npz.read_bytes()
    r = python_module("from-npz", npz, "-o", npz, "--model", "m", "--force")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert f"-o {npz} is also an input (the .npz {npz})" in r.stderr, r.stderr
    assert npz.read_bytes() == before
    cfg = tmp_path / "c.json"
    cfg.write_text('{"heads": 2, "head_dim": 16, "tokens": 64}')
    r = python_module("from-npz", npz, "-o", cfg, "--model", "m", "--force", "--config", cfg)
    assert r.returncode == 2 and f"is also an input (--config {cfg})" in r.stderr, r.stderr
    assert cfg.read_text() == '{"heads": 2, "head_dim": 16, "tokens": 64}'


def test_from_npz_refuses_an_integer_input_that_validate_would_refuse(tmp_path, ts):
    import numpy as np

    x = np.ones((64, 2, 16), dtype=np.float32)
    np.savez(tmp_path / "int.npz", q=x.astype(np.int32), k=x, v=x)
    out = tmp_path / "f.h5"
    r = python_module("from-npz", tmp_path / "int.npz", "-o", out, "--model", "m")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert f"{tmp_path / 'int.npz'}: /attention/q: element type int32, expected one of" in r.stderr, r.stderr
    assert not out.exists()
    np.savez(tmp_path / "half.npz", q=x.astype(np.float16), k=x, v=x)
    assert python_module("from-npz", tmp_path / "half.npz", "-o", out, "--model", "m").returncode == 0
    ts("fixture", "validate", out)


def test_from_npz_shape_errors_name_the_npz(tmp_path):
    import numpy as np

    x = np.zeros((64, 2, 16), dtype=np.float32)
    npz = tmp_path / "short.npz"
    np.savez(npz, q=x, k=x[:32], v=x)
    r = python_module("from-npz", npz, "-o", tmp_path / "f.h5", "--model", "m")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert f"{npz}: /attention/k: shape (32, 2, 16), expected (64, 2, 16)" in r.stderr, r.stderr
    np.savez(tmp_path / "flat.npz", q=x[0], k=x, v=x)
    r = python_module("from-npz", tmp_path / "flat.npz", "-o", tmp_path / "f.h5", "--model", "m")
    assert r.returncode == 2 and f"{tmp_path / 'flat.npz'}: q: shape (2, 16) is not SHD" in r.stderr, r.stderr
    assert not (tmp_path / "f.h5").exists()


def test_from_npz_help_gives_defaults_and_an_example():
    r = python_module("from-npz", "--help")
    assert r.returncode == 0, r.stderr
    for want in ("(default SHD", "(default 0)", "default captured", "example:\n",
                 "from-npz captured.npz -o block3.h5", "integer arrays are refused"):
        assert want in r.stdout, (want, r.stdout)
