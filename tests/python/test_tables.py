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


# --- No copies: every module of the package reads C++'s facts from the tables -------------------
# A copy is found in a module's code (docstrings and comments are prose, not read), as one of:
#   - a string holding a schema or format name ("touchstone.<what>/<n>": C++ names them all) or
#     one of the tables' distinctive strings: the digest scheme, a clock's name;
#   - a number that is one of the tables' distinctive numbers (the digest's leaf size, the
#     mistrust ceiling), also written as arithmetic (1 << 22);
#   - a number bound to the name of a C++ fact (a default, keyword, flag default or assignment
#     named ceiling_tflops, leaf_bytes, block_q, block_k, block_k_max), whatever its value;
#   - a tuple, list or set holding two or more names of one of the tables' vocabularies
#     (element types, clocks, verdicts, built-in gates, sage2 presets, fixture presets), or half
#     or more of a list of field names (stages, metrics, /config's required keys, an output's
#     attributes); a dict whose keys are so (a vocabulary, or an output's attributes).
PACKAGE = os.path.join(ROOT, "python", "touchstone")
# Copies in python/touchstone/fixture_io.py, whose writer is being replaced by C++'s: each is
# listed until that module reads it from the tables (an entry that no longer matches fails).
KNOWN_COPIES = {
    ("fixture_io.py", "lists the table's output_attrs",
     ("backend", "created_at", "params", "touchstone_version")),
}


def _copies_of_the_tables(tables_json, source, where):
    import ast
    import re

    T = tables_json
    ff = T["fixture_format"]

    distinct = set(T["clocks"]) | {ff["digest"]["scheme"]}
    numbers = {ff["digest"]["leaf_bytes"]: "the digest's leaf size",
               T["mistrust"]["ceiling_tflops"]: "the mistrust ceiling"}
    named = {"ceiling_tflops", "leaf_bytes", "block_q", "block_k", "block_k_max"}
    vocab = {"dtypes": [d["name"] for d in ff["dtypes"]], "clocks": T["clocks"],
             "verdicts": T["verdicts"], "builtin_gates": T["builtin_gates"],
             "sage2_presets": [p["name"] for p in T["sage2_presets"]],
             "fixture_presets": [p["name"] for p in T["fixture_presets"]]}
    fields = {"stages": [s["name"] for s in T["stages"]], "metrics": T["metrics"],
              "config.required": T["config"]["required"],
              "output_attrs": ff["output_attrs"]["required"]}

    def fold(n):
        if isinstance(n, ast.Constant) and isinstance(n.value, (int, float)) \
                and not isinstance(n.value, bool):
            return n.value
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub) and fold(n.operand) is not None:
            return -fold(n.operand)
        if isinstance(n, ast.BinOp):
            a, b = fold(n.left), fold(n.right)
            ops = {ast.Mult: lambda: a * b, ast.Add: lambda: a + b, ast.Pow: lambda: a ** b,
                   ast.LShift: lambda: int(a) << int(b)}
            if a is not None and b is not None and type(n.op) in ops:
                return ops[type(n.op)]()
        return None

    tree = ast.parse(source, where)
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    for n in ast.walk(tree):  # arithmetic is judged whole: 1 << 22, not its 22
        for child in ast.iter_child_nodes(n):
            child.parent = n
    found = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
            found += [(n.lineno, "holds the table's string", d) for d in sorted(distinct) if d in n.value]
            found += [(n.lineno, "names a schema", m)
                      for m in re.findall(r"touchstone\.[a-z_]+/\d+", n.value)]
        if isinstance(n, (ast.Constant, ast.BinOp)) and fold(n) in numbers \
                and not isinstance(getattr(n, "parent", None), ast.BinOp):
            found.append((n.lineno, f"is {numbers[fold(n)]}", fold(n)))
        bound = []
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            pos = n.args.posonlyargs + n.args.args
            bound += zip([a.arg for a in pos[len(pos) - len(n.args.defaults):]], n.args.defaults)
            bound += [(a.arg, d) for a, d in zip(n.args.kwonlyargs, n.args.kw_defaults) if d]
        elif isinstance(n, ast.Call):
            bound += [(k.arg, k.value) for k in n.keywords if k.arg]
            flag = n.args[0].value if n.args and isinstance(n.args[0], ast.Constant) else None
            if isinstance(flag, str) and flag.startswith("--"):
                bound += [(flag[2:].replace("-", "_"), k.value) for k in n.keywords if k.arg == "default"]
        elif isinstance(n, ast.Assign):
            bound += [(t.id, n.value) for t in n.targets if isinstance(t, ast.Name)]
        found += [(v.lineno, f"binds {name} to a number", fold(v)) for name, v in bound
                  if name.lower().strip("_") in named and fold(v) is not None]
        if isinstance(n, (ast.Tuple, ast.List, ast.Set)):
            elts, lists = n.elts, {**vocab, **fields}
        elif isinstance(n, ast.Dict):
            elts, lists = [k for k in n.keys if k is not None], {**vocab, "output_attrs": fields["output_attrs"]}
        else:
            continue
        names = {e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
        for what, table in lists.items():
            common = names & set(table)
            if len(common) >= (2 if what in vocab else max(2, (len(table) + 1) // 2)):
                found.append((n.lineno, f"lists the table's {what}", tuple(sorted(common))))
    return found


def _package_copies():
    with open(os.path.join(PACKAGE, "tables.json")) as fh:
        T = json.load(fh)
    out = []
    for name in sorted(os.listdir(PACKAGE)):
        if name.endswith(".py"):
            with open(os.path.join(PACKAGE, name)) as fh:
                out += [(name, line, what, value)
                        for line, what, value in _copies_of_the_tables(T, fh.read(), name)]
    return out


def test_no_module_of_the_package_holds_a_copy_of_a_table():
    found = _package_copies()
    copies = [f"python/touchstone/{name}:{line}: {what}: {value!r}"
              for name, line, what, value in found if (name, what, value) not in KNOWN_COPIES]
    assert not copies, ("copies of C++'s tables (read them from touchstone.tables instead):\n"
                        + "\n".join(copies))
    stale = KNOWN_COPIES - {(name, what, value) for name, _, what, value in found}
    assert not stale, f"no longer copied: remove from KNOWN_COPIES: {sorted(stale, key=str)}"


@pytest.mark.parametrize("code, what", [
    ('def f(ceiling_tflops=5000.0): pass', "binds ceiling_tflops to a number"),
    ('p.add_argument("--ceiling-tflops", type=float, default=50000)', "binds ceiling_tflops"),
    ('FORMAT = "touchstone.sol_routing/1"', "names a schema"),
    ('msg = f"expected {x!r}, not touchstone.fixture/1"', "names a schema"),
    ('digest = f"sha256-tree-4MiB:{h}"', "holds the table's string"),
    ('return ms, "device_events"', "holds the table's string"),
    ('_LEAF = 1 << 22', "is the digest's leaf size"),
    ('if tag in ("bfloat16", "float16"): pass', "lists the table's dtypes"),
    ('V = ("ACCEPT", "REJECT", "INCONCLUSIVE")', "lists the table's verdicts"),
    ('d = {"backend": b, "params": p, "touchstone_version": v, "created_at": t}', "output_attrs"),
    ('def f(block_k=64): pass', "binds block_k to a number"),
])
def test_the_copy_finder_finds_each_kind_of_copy(code, what):
    with open(os.path.join(PACKAGE, "tables.json")) as fh:
        found = _copies_of_the_tables(json.load(fh), code, "example.py")
    assert any(what in w for _, w, _ in found), found


@pytest.mark.parametrize("code", [
    '"""A docstring may name touchstone.fixture/1, device_events and 1 << 22."""',
    'FORMAT = tables.SOL_ROUTING_FORMAT',
    'missing = [s for s in ("q_rope", "k_rope", "qkv") if s not in stages]',
    'c = {"hidden": h, "heads": n, "head_dim": d, "ffn_hidden": f, "grid_t": 1, "grid_h": 1, '
    '"grid_w": 1, "segments": s, "rope_rot_dims": 0}',
    'def run(reps=5, preset="ci"): pass',
    'x = 64 * 128',
])
def test_the_copy_finder_leaves_uses_alone(code):
    with open(os.path.join(PACKAGE, "tables.json")) as fh:
        assert _copies_of_the_tables(json.load(fh), code, "example.py") == []
