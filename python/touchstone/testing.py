"""Assertions for kernel tests (docs/python.md "touchstone.testing"): gate a candidate in pytest
(or any test runner) and fail with the gate's terminal report.

    from touchstone.testing import assert_gate, assert_sage_like

    def test_my_kernel(tiny_fixture):                      # the pytest plugin's fixture
        assert_sage_like(tiny_fixture, my_kernel)          # f(q, k, v, softmax_scale) -> out
        assert_gate(tiny_fixture, out_tensor, gate="sage_compat", baseline="sage2:preset=sm90")

The fixture is never changed: the candidate is stored in a copy in a temporary folder, gated
there, and the copy removed when the candidate is accepted (kept, and named in the message,
when it is not, for `touchstone triage` or `touchstone compare`)."""
import json
import os
import re
import shutil
import tempfile

from . import _native, api, layouts, tables, terminal
from .schema import CaptureError

# Set by the pytest plugin (touchstone.pytest_plugin): where each gate run's JUnit and HTML
# reports go (--touchstone-reports DIR), and the running test's id (their file name).
report_dir = None
current_test = None


_stems_used = set()


def _report_stem(name):
    """The reports' file name: the test's name (or the candidate's), -2, -3 ... for a test's
    further gate runs."""
    base = re.sub(r"[^A-Za-z0-9_.-]+", "_", current_test or name).strip("_") or "gate"
    stem, n = base, 1
    while (report_dir, stem) in _stems_used:
        n += 1
        stem = f"{base}-{n}"
    _stems_used.add((report_dir, stem))
    return stem


def _stored_names(path):
    core = _native.core()
    if core is not None:
        return set(core.list_group(path, "/outputs"))  # empty without /outputs
    from .fixture_io import read_fixture

    return set(read_fixture(path).outputs)


def _store_tensor(path, name, tensor, layout):
    from .fixture_io import add_output

    add_output(path, name, layouts.to_shd(tensor, layout, 0, "candidate"))


def _store_callable(path, name, fn, layout, device, timed):
    """Replays `fn` on the copy: with timings (touchstone.replay) when the gate is to judge its
    speed, else one call whose output is stored untimed."""
    from . import kernels, replay

    kernel = kernels.Kernel(name, lambda torch, ctx=None: fn,
                            layouts.check_layout(getattr(fn, "touchstone_layout", layout or "BHSD")),
                            fn.__doc__ or "")
    if timed:
        replay.replay(path, kernel, name=name, device=device)
        return
    import torch

    from .fixture_io import add_output

    dev = replay.pick_device(device, torch)
    q, k, v, scale = replay.load_qkv(path, torch)
    args = [layouts.from_shd(t.to(dev), kernel.layout) for t in (q, k, v)]
    try:
        with torch.no_grad():
            out = kernel.make(torch)(*args, scale)
    except Exception as e:  # the kernel's own failure, in one line, as replay reports it
        raise CaptureError(f"kernel {name!r} raised {type(e).__name__}: {e}") from e
    if not hasattr(out, "shape") or tuple(out.shape) != tuple(args[0].shape):
        raise CaptureError(f"kernel {name!r} returned "
                           f"{tuple(out.shape) if hasattr(out, 'shape') else type(out).__name__}, "
                           f"expected {kernel.layout} {tuple(args[0].shape)} like q")
    add_output(path, name, layouts.to_shd(out, kernel.layout, 0, "output"))


# A failure's message is read in a pytest log: at most this many columns (the C++ tables' width
# off a terminal), whatever the terminal running the tests is.
MESSAGE_COLUMNS = tables.TERMINAL_WIDTH


def _failure_message(run, verdict, gate_name, fixture, copy):
    """The verdict, then the rules not passed (those that locate the fault, at a head, query
    block or frame, first), then the gate's report naming the user's fixture; last the working
    copy that holds the candidate's output (where the report's repro line runs)."""
    failed = [o for o in verdict.outcomes
              if o.status in ("fail", "inconclusive") or (o.status == "missing" and not o.optional)]
    failed.sort(key=lambda o: "worst" not in json.loads(o.to_json()))  # stable: gate order within
    rules = [f"{o.id} [{o.status}]: {o.message}" for o in failed]
    # A NaN is said once, as the terminal report says it (report/gate_terminal.cpp).
    if any(o.builtin and o.id == "finite_guard" and o.status == "fail" for o in failed):
        nan = [o for o in failed if o.status == "fail" and not o.builtin
               and " non-finite values (NaN never passes)" in o.message]
        if nan:
            rules = [f"{', '.join(o.id for o in nan)} [fail]: the candidate's non-finite values "
                     "(finite_guard below)"] + [f"{o.id} [{o.status}]: {o.message}"
                                                 for o in failed if o not in nan]
    # fill_within: a path longer than a line (a long TMPDIR) is broken after a '/', never left
    # past the message's columns.
    lines = [terminal.fill_within(f"{verdict.candidate}: {verdict.verdict} by gate {gate_name}, on {fixture}",
                                  MESSAGE_COLUMNS)]
    if failed:
        lines.append("rules not passed (those locating the fault first):")
        lines += [terminal.fill_within(r, MESSAGE_COLUMNS, "  ", "      ") for r in rules]
    # The report's input is the user's fixture; its repro line keeps the copy, where the
    # candidate's output is stored.
    report = run.render_terminal(width=MESSAGE_COLUMNS, input=fixture).rstrip("\n")
    lines += ["", report, terminal.fill_within(f"(the fixture with the candidate's output: {copy})",
                                               MESSAGE_COLUMNS, "", "")]
    return "\n".join(lines)


def assert_gate(fixture, candidate, *, gate="sage_compat", baseline=None, name=None, layout=None,
                device="auto", timed=None, **gate_options):
    """Gates `candidate` on `fixture` and raises AssertionError, with the gate's terminal report
    as its message, unless it is ACCEPTed; returns the CandidateVerdict.

    candidate: a torch tensor or numpy array (the kernel's output on the fixture's q, k, v:
    [S, H, D], or `layout` "BHSD"/"BSHD" with a batch of one); a callable f(q, k, v,
    softmax_scale) -> out (replayed on the fixture's q, k, v in `layout`, default BHSD or its
    touchstone_layout attribute, on `device`); the name of an output stored in the fixture; or
    any backend spec (docs: "Backends"), e.g. "sol:tau=1.3" or "plugin:./libmine.so".
    gate: a built-in name or a gate file; baseline: a spec (default: the gate's).
    timed: judge the candidate's speed (a callable is then replayed with timings); default only
    when the baseline is a stored real kernel ("stored:NAME"), since an emulation is no speed
    baseline. gate_options: touchstone.gate's (pairs, warmup, rotate, seed, exact, ...)."""
    __tracebackhide__ = True  # pytest shows the user's test, not this function's frames
    fixture = os.fspath(fixture)
    if not os.path.isfile(fixture):
        raise CaptureError(f"{fixture}: no such fixture file")
    g = api.load_gate(gate)
    base = baseline or g.baseline
    if timed is None:
        timed = base.startswith("stored:")
    work = tempfile.mkdtemp(prefix="touchstone-assert-")
    copy = os.path.join(work, os.path.basename(fixture))
    keep = False
    try:
        shutil.copyfile(fixture, copy)
        # The outputs live in files of their own beside the fixture (docs/fixture-format.md).
        from .fixture_io import outputs_folder

        if os.path.isdir(outputs_folder(fixture)):
            shutil.copytree(outputs_folder(fixture), outputs_folder(copy))
        label = name or getattr(candidate, "__name__", None) or "candidate"
        label = re.sub(r"[^A-Za-z0-9_]+", "_", label).strip("_") or "candidate"
        if isinstance(candidate, str):
            spec = f"stored:{candidate}" if candidate in _stored_names(copy) else candidate
        elif callable(candidate):
            _store_callable(copy, label, candidate, layout, device, timed)
            spec = f"stored:{label}"
        elif hasattr(candidate, "shape"):
            _store_tensor(copy, label, candidate, layout or "SHD")
            spec = f"stored:{label}"
        else:
            raise CaptureError(f"assert_gate: candidate {type(candidate).__name__}: expected a "
                               "tensor, an array, a callable or a stored output's name")
        reports = {}
        if report_dir:
            os.makedirs(report_dir, exist_ok=True)
            stem = os.path.join(report_dir, _report_stem(label))
            reports = {"junit": stem + ".junit.xml", "html": stem + ".html"}
        run = api.gate(copy, [spec], gate=gate, baseline=base, **reports, **gate_options)
        verdict = run.candidates[0]
        if not verdict.accepted:
            keep = True
            raise AssertionError(_failure_message(run, verdict, g.name, fixture, copy))
        return verdict
    except CaptureError as e:
        # Bad input is about the user's fixture, not the working copy beside it.
        raise CaptureError(str(e).replace(copy, fixture)) from None
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def assert_sage_like(fixture, candidate, *, preset=None, **kwargs):
    """assert_gate on the built-in sage_compat gate against the sage2 emulation of `preset`
    (default: the C++ table's default preset): a drop-in replacement of SageAttention 2."""
    __tracebackhide__ = True
    p = preset or tables.SAGE2_DEFAULT_PRESET
    if p not in tables.SAGE2_PRESETS:
        raise CaptureError(f"unknown sage2 preset {p!r} (presets: {', '.join(tables.SAGE2_PRESETS)})")
    kwargs.setdefault("baseline", f"sage2:preset={p}")
    return assert_gate(fixture, candidate, gate="sage_compat", **kwargs)
