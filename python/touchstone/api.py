"""The C++ library in-process (docs/python.md "Gating from Python"): gate files, the gate engine
and its typed verdicts, metrics, fixture validation, through the extension touchstone._core.

    run = touchstone.gate("f.h5", ["stored:mine"], gate="sage_compat")
    for c in run.candidates:
        print(c.candidate, c.verdict, [(o.id, o.status, o.figure, o.bound) for o in c.outcomes])
    print(run.render_terminal())
    m = touchstone.compare(out, "exact", fixture="f.h5")     # {"rel_l2": ..., "cosine": ...}

Bad input (unknown gate, fixture, spec) raises CaptureError with the C++ side's one-line
message; a candidate that fails to run is a REJECT in the run, as in `touchstone gate`."""
import contextlib
import json
import os
import subprocess

import numpy as np

from . import _native, storage, tables
from .schema import CaptureError


def extension_available():
    """Whether touchstone._core loaded (the reason otherwise: touchstone._native.why_not())."""
    return _native.core() is not None


@contextlib.contextmanager
def _cpp(what):
    core = _native.require(what)
    try:
        yield core
    except core.InputError as e:
        raise CaptureError(str(e)) from None


def load_gate(gate):
    """A GateFile: a built-in name (touchstone.tables.BUILTIN_GATES) or a touchstone.gate/1 file;
    a GateFile passes through."""
    if not isinstance(gate, str):
        return gate
    with _cpp("load_gate") as core:
        return core.load_gate(gate)


def validate_fixture(path, allow_nonfinite=False):
    """`touchstone fixture validate`: its summary line; CaptureError naming file, dataset, rule."""
    with _cpp("validate_fixture") as core:
        return core.validate_fixture(os.fspath(path), allow_nonfinite)


def _write_atomic(path, text):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


def write_reports(run, *, junit=None, html=None, markdown=None, json_path=None):
    """Writes the run's reports (each atomically) to the paths given."""
    for path, render in ((junit, run.render_junit), (html, run.render_html),
                         (markdown, run.render_markdown), (json_path, run.render_json)):
        if path:
            _write_atomic(os.fspath(path), render())


def gate(fixture, candidates, *, gate, baseline=None, pairs=None, warmup=None, rotate=None,
         seed=1, exact="auto", allow_nonfinite=False, accuracy_only=False, junit=None, html=None,
         markdown=None, json_path=None):
    """Runs, times and judges `candidates` (backend specs: "stored:NAME", "sol:tau=1.3",
    "plugin:PATH.so", ...) against `baseline` (default: the gate's) on a fixture, as
    `touchstone gate --fixture` does, and returns the GateRun: .candidates (CandidateVerdict:
    .verdict, one of touchstone.VERDICTS: "ACCEPT"/"REJECT"/"INCONCLUSIVE"/"MISTRUSTED";
    .accepted, .outcomes of RuleOutcome: .id, .status, .figure, .bound, .message), .exit_code,
    .render_terminal() / _junit() / _markdown() / _html() / _json(). pairs, warmup, rotate: the timing flags (default
    touchstone.tables.GATE_TIMING). accuracy_only: leave out the gate's speed rules (a CPU CI
    runner, where time means nothing), as `touchstone gate --accuracy-only`. Report paths given
    are written."""
    if isinstance(candidates, str):
        candidates = [candidates]
    for flag, value, least in (("pairs", pairs, 1), ("warmup", warmup, 0), ("rotate", rotate, 1)):
        # None is the default; the C++ side reads -1 as None, so a -1 given here must not pass.
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < least):
            raise CaptureError(f"{flag}={value!r}: expected a whole number >= {least} (or None: the default)")
    g = load_gate(gate)
    with _cpp("gate") as core:
        run = core.run_gate(g, os.fspath(fixture), baseline or g.baseline, list(candidates),
                            pairs=-1 if pairs is None else pairs,
                            warmup=-1 if warmup is None else warmup,
                            rotate=-1 if rotate is None else rotate, seed=seed, exact=exact,
                            allow_nonfinite=allow_nonfinite,
                            gate_arg=gate if isinstance(gate, str) else g.source,
                            accuracy_only=accuracy_only)
    write_reports(run, junit=junit, html=html, markdown=markdown, json_path=json_path)
    return run


def _dataset_of(fixture, name, core):
    """A stored tensor's dataset, named as `touchstone compare` names them ("stored:NAME" too)."""
    if name.startswith("stored:"):
        name = name[len("stored:"):]
    if name.startswith("/"):
        return name
    if name == "observed":
        return "/attention/observed"
    if name == "exact":
        for n in ("exact", "exact_cuda"):
            if core.has_dataset(fixture, f"/outputs/{n}/attention"):
                return f"/outputs/{n}/attention"
    ds = f"/outputs/{name}/attention"
    if not core.has_dataset(fixture, ds):
        outs = core.list_group(fixture, "/outputs")
        raise CaptureError(f"{fixture}: no dataset {ds} (for {name!r}; outputs: "
                           f"{', '.join(outs) or 'none'})")
    return ds


def _as_float64(x, fixture, core):
    """(float64 array, storage type name) of a tensor, array or stored name."""
    if isinstance(x, str):
        if fixture is None:
            raise CaptureError(f"compare: {x!r} names a stored tensor; give fixture=")
        return core.read_tensor(fixture, _dataset_of(fixture, x, core))
    stored, dtype = storage.to_storage(x)
    if dtype == tables.BFLOAT16:
        return storage.bf16_bits_to_float32(stored).astype(np.float64), dtype
    return np.asarray(stored, dtype=np.float64), dtype


def compare(a, b, *, fixture=None, breakdown=False):
    """docs/metrics.md's metrics of `a` (the candidate) against `b` (the reference), computed by
    the C++ metrics: each a torch tensor, a numpy array, or with fixture= the name of a stored
    tensor ("exact", "observed", an output name or "stored:NAME", or a dataset path). Returns a
    dict (rel_l2, cosine, gain, max_abs, ulp_max, nonfinite, ...); breakdown=True (needs
    fixture= for its /config) adds "breakdown": per head, per 128-token query block, per latent
    frame."""
    fixture = os.fspath(fixture) if fixture is not None else None
    with _cpp("compare") as core:
        av, ad = _as_float64(a, fixture, core)
        bv, bd = _as_float64(b, fixture, core)
        config = ""
        if breakdown:
            if fixture is None:
                raise CaptureError("compare: breakdown=True needs fixture= (its /config)")
            from .fixture_io import read_fixture

            config = json.dumps(read_fixture(fixture).config, default=_plain)
        return json.loads(core.metrics_json(av, ad, bv, bd, config))


def _plain(v):
    return v.item() if hasattr(v, "item") else str(v)


def synthesize(path, preset="tiny", *, seed=0, structure=None, with_block=False, force=False):
    """A synthetic fixture by `touchstone fixture synth` (the C++ generator: the same bits on any
    machine). preset: one of touchstone.tables.FIXTURE_PRESETS."""
    exe = _native.cli()
    if exe is None:
        raise CaptureError("synthesize needs the touchstone binary (set TOUCHSTONE_CLI or "
                           "TOUCHSTONE_BUILD_DIR)")
    cmd = [exe, "fixture", "synth", "--preset", preset, "--seed", str(seed), "-o", os.fspath(path)]
    if structure is not None:
        cmd += ["--structure", str(structure)]
    if with_block:
        cmd.append("--with-block")
    if force:
        cmd.append("--force")
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise CaptureError(r.stderr.strip() or f"{' '.join(cmd)}: exit {r.returncode}")
    return os.fspath(path)
