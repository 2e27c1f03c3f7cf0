"""The package reads its C++ facts from the C++ side (docs/python.md "The extension and the
tables"): tables.json is `touchstone tables --json`, the extension gives the same, the version is
one, the timing defaults and /config rules are C++'s."""
import json
import os
import subprocess
import sys

import pytest

import touchstone
from touchstone import _native, schema, tables
from conftest import ROOT


def test_tables_json_is_the_builds(ts):
    built = json.loads(ts("tables", "--json").stdout)
    with open(os.path.join(ROOT, "python", "touchstone", "tables.json")) as fh:
        shipped = json.load(fh)
    assert shipped == built, "python/touchstone/tables.json is stale: run scripts/python-tables"
    with open(os.path.join(ROOT, "python", "touchstone", "VERSION")) as fh:
        assert fh.read().strip() == built["version"]
    assert touchstone.__version__ == built["version"] == ts("--version").stdout.split()[-1]
    assert schema.VERSION == f"touchstone-python {built['version']}"


def test_the_extension_gives_the_same_tables():
    core = _native.core()
    if core is None:
        pytest.skip(f"no extension: {_native.why_not()}")
    assert json.loads(core.tables_json()) == json.load(
        open(os.path.join(ROOT, "python", "touchstone", "tables.json")))
    assert tables.SOURCE == "extension" and core.__version__ == tables.VERSION


def test_what_python_reads_from_the_tables():
    assert tables.STAGES[0] == schema.STAGES[0] and len(schema.STAGES) == len(tables.TABLES["stages"])
    c = schema.attention_config(10, 2, 32)
    assert schema.stage_shape("qkv", dict(c, ffn_hidden=96)) == (10, 3, 2, 32)
    assert schema.stage_shape(tables.STAGES[-1], c) == (10, 64)
    sm = next(iter(tables.SAGE2_PRESETS))
    from touchstone import sage

    assert sage.PRESETS[f"sageattn_{sm}"][2] == tuple(
        tables.SAGE2_PRESETS[sm]["config"][k] for k in ("blkq", "warpq", "blkk", "warpk"))
    assert tables.REPLAY_TIMING == {"reps": 20, "warmup": 3, "rotate": 3}
    assert tables.GATE_TIMING == {"pairs": 10, "warmup": 1, "rotate": 2}
    from touchstone import cli

    a = cli._parser().parse_args(["replay", "f.h5", "--kernel", "sdpa"])
    assert (a.reps, a.warmup, a.rotate) == (20, 3, 3)


def _config_error(env_extra):
    code = ("import touchstone.schema as s\n"
            "try:\n    s.attention_config(10, 2, 33)\nexcept s.CaptureError as e:\n    print(e)\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), **env_extra)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_config_rules_are_cpps_with_and_without_the_extension():
    with_ext = _config_error({})
    without = _config_error({"TOUCHSTONE_EXTENSION": "0"})
    assert "head_dim must be even, got 33" in with_ext
    assert "head_dim must be even, got 33" in without
    with pytest.raises(schema.CaptureError, match="segments cover 9 tokens"):
        schema.attention_config(10, 2, 32, segments=[{"name": "v", "kind": "video", "length": 9}])
    with pytest.raises(schema.CaptureError, match="kind"):
        schema.full_config(dict(schema.attention_config(10, 2, 32),
                                segments=[{"name": "v", "kind": "vid", "start": 0, "length": 10}]))


def test_without_the_extension_the_package_reads_tables_json():
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), TOUCHSTONE_EXTENSION="0")
    r = subprocess.run([sys.executable, "-c", "from touchstone import tables; print(tables.SOURCE)"],
                       capture_output=True, text=True, env=env)
    assert r.stdout.strip().endswith("tables.json"), r.stderr


def test_the_verdicts_are_cs_one_list():
    """Every verdict C++ gives, MISTRUSTED included, from the one table: tables.json, the
    extension's table and its Verdict enum agree."""
    assert touchstone.VERDICTS == tables.VERDICTS == ("ACCEPT", "REJECT", "INCONCLUSIVE", "MISTRUSTED")
    core = _native.core()
    if core is None:
        pytest.skip(f"no extension: {_native.why_not()}")
    assert tuple(core.Verdict.__members__) == tables.VERDICTS
