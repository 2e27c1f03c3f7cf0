"""The tables the package reads from touchstone's C++ side instead of keeping copies (README.md,
"Tables, not copies"): the block's stages and their shapes, the sage2 presets, the fixture size
presets, the timing defaults, /config's required keys and defaults, the fixture format (content
digest, element types, the attributes of outputs and timings), sol's routing format and block
geometry, the mistrust ceiling, the version. tests/python/test_tables.py fails on a module of
the package that holds a copy of one of them.

They come from the extension (touchstone._core.tables_json()) where it loads, else from
tables.json beside this file: the output of `touchstone tables --json`, written by
`scripts/python-tables` and checked equal to the C++ build's by tests/python/test_tables.py, so
that the package works on a machine without the build (a pip install, the GPU machine's other
Python) and cannot drift from C++.

/config completion and validation is C++'s alone (core/config_json.cpp): through the extension,
else through `touchstone tables --config -`; without either it is an error saying so."""
import json
import os
import subprocess

from . import _native

_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tables.json")


def _load():
    core = _native.core()
    if core is not None:
        return json.loads(core.tables_json()), "extension"
    with open(_FILE) as fh:
        return json.load(fh), _FILE


TABLES, SOURCE = _load()

VERSION = TABLES["version"]
FIXTURE_SCHEMA = TABLES["fixture_schema"]
STAGES = tuple(s["name"] for s in TABLES["stages"])
STAGE_DIMS = {s["name"]: tuple((d["key"], d["factor"]) for d in s["shape"]) for s in TABLES["stages"]}
SAGE2_PRESETS = {p["name"]: p for p in TABLES["sage2_presets"]}
SAGE2_DEFAULT_PRESET = TABLES["sage2_default_preset"]
# One preset per real SageAttention function, the default preset first: the presets whose real
# kernels differ (what `sage-fidelity` checks by default).
SAGE2_ONE_PER_FUNCTION = tuple({p["real_function"]: p["name"] for p in
                                reversed(TABLES["sage2_presets"])}.values())[::-1]
FIXTURE_PRESETS = {p["name"]: p["config"] for p in TABLES["fixture_presets"]}
CLOCKS = tuple(TABLES["clocks"])
GATE_TIMING = dict(TABLES["timing"]["gate"])
REPLAY_TIMING = dict(TABLES["timing"]["replay"])
BUILTIN_GATES = tuple(TABLES["builtin_gates"])
METRICS = tuple(TABLES["metrics"])
# core/terminal_defaults.hpp: the width of text off a terminal (a pipe, a CI log), and the least one.
TERMINAL_WIDTH = TABLES["terminal"]["default_width"]
TERMINAL_MIN_WIDTH = TABLES["terminal"]["min_width"]
# Every verdict a CandidateVerdict's .verdict can be, in C++'s order (gates/verdict.hpp).
VERDICTS = tuple(TABLES["verdicts"])
# How fixtures store things (docs/fixture-format.md; fixtures/digest.hpp, fixtures/fixture.hpp).
FIXTURE_FORMAT = TABLES["fixture_format"]
DIGEST_SCHEME = FIXTURE_FORMAT["digest"]["scheme"]
DIGEST_LEAF_BYTES = FIXTURE_FORMAT["digest"]["leaf_bytes"]
DIGEST_ATTRIBUTE = FIXTURE_FORMAT["digest"]["attribute"]
# Element types by their names in fixtures, in C++'s order (core/tensor.hpp kDTypes).
DTYPES = tuple(d["name"] for d in FIXTURE_FORMAT["dtypes"])
DTYPE_BYTES = {d["name"]: d["bytes"] for d in FIXTURE_FORMAT["dtypes"]}
FLOAT_DTYPES = tuple(d["name"] for d in FIXTURE_FORMAT["dtypes"] if d["float"])
# The root attribute `schema` of an output's own file, and the attribute of each output dataset
# naming the identity of the inputs it was computed from (docs/fixture-format.md).
OUTPUT_SCHEMA = FIXTURE_FORMAT["output_schema"]
INPUTS_IDENTITY_ATTRIBUTE = FIXTURE_FORMAT["inputs_identity_attribute"]
# The attribute naming a dataset's element type, and the types stored as their uint16 bits
# with it: bfloat16, then float16 (C++ lists them in that order).
DTYPE_ATTRIBUTE = FIXTURE_FORMAT["dtype_attribute"]
UINT16_DTYPES = tuple(FIXTURE_FORMAT["uint16_dtypes"])
BFLOAT16, FLOAT16 = UINT16_DTYPES
# The attributes every /outputs/<name>/<tensor> carries, and those it carries when known.
OUTPUT_ATTRS = tuple(FIXTURE_FORMAT["output_attrs"]["required"])
OUTPUT_ATTRS_OPTIONAL = tuple(FIXTURE_FORMAT["output_attrs"]["optional"])
# The attributes of /timings/<name> C++ reads: its clock, one timing run id for all samples
# (timing_run) or one per sample (timing_runs).
TIMING_ATTRS = dict(FIXTURE_FORMAT["timing_attrs"])
CLOCK_DEVICE = TABLES["clock_names"]["device"]
CLOCK_HOST = TABLES["clock_names"]["host"]
# sol's routing dataset (`reference --backend sol ... --store-routing`) and its block defaults.
SOL = dict(TABLES["sol"])
SOL_ROUTING_FORMAT = SOL["routing_format"]
# A stored kernel faster than this dense-equivalent rate is MISTRUSTED (its timer missed it).
MISTRUST_CEILING_TFLOPS = TABLES["mistrust"]["ceiling_tflops"]
CONFIG_REQUIRED = tuple(TABLES["config"]["required"])
# /config keys stored as int64 (the rest are float64 or text): as C++ writes them.
CONFIG_INT_KEYS = tuple(k for k, v in next(iter(FIXTURE_PRESETS.values())).items()
                        if isinstance(v, int) and not isinstance(v, bool))


def complete_config(config):
    """/config with its defaults filled in, validated by C++ (BlockConfig::validate); segments as
    JSON text, as fixtures store them. Raises CaptureError naming the rule broken."""
    from .schema import CaptureError

    text = json.dumps(config, default=_plain)
    core = _native.core()
    if core is not None:
        try:
            return json.loads(core.complete_config(text, "config"))
        except core.InputError as e:
            raise CaptureError(str(e)) from None
    exe = _native.cli()
    if exe is None:
        raise CaptureError("checking /config needs touchstone's C++ side: the extension "
                           f"touchstone._core ({_native.why_not()}) or the touchstone binary "
                           "(set TOUCHSTONE_CLI or TOUCHSTONE_BUILD_DIR)")
    r = subprocess.run([exe, "tables", "--config", "-"], input=text, capture_output=True, text=True)
    if r.returncode == 2:
        raise CaptureError(r.stderr.strip().split("error: ", 1)[-1])
    if r.returncode != 0:
        raise CaptureError(f"{exe} tables --config: exit {r.returncode}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def _plain(v):
    """numpy scalars and the like as JSON numbers."""
    if hasattr(v, "item"):
        return v.item()
    raise TypeError(f"{type(v).__name__} is not a /config value")
