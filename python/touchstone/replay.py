"""Replaying a kernel on a fixture's q, k, v and storing its output and timings (add_output).

Timing: after `warmup` calls, `reps` calls cycling through `rotate` copies of the inputs (so no
call runs on inputs the previous one left in cache), each timed on its own: by CUDA events on a
GPU (clock "device_events"), by the host's monotonic clock around the call on the CPU (clock
"host_steady"; CPU torch ops have finished when they return). The stored output comes from one
more call, after timing. Several kernels are timed interleaved in one timing run (rounds
K1 K2 ... Kn, warm-up rounds first): their /timings carry one timing_run id, the device and each
kernel's round_order, so sample i of each is round i (docs/python.md "Interleaved replay")."""
import json
import time
import uuid

import h5py
import numpy as np

from . import layouts, sage, storage, tables, terminal, transfer
from .phases import phase
from .fixture_io import _fixture_geometry, add_outputs
from .schema import CaptureError


def load_qkv(path, torch):
    """q, k, v [S, H, D] torch tensors in the fixture's storage type, and the softmax scale."""
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise CaptureError(f"{path}: /: not readable as HDF5 ({e})")
    with f:
        _fixture_geometry(f, path)
        scale = float(f["config"].attrs.get("softmax_scale", f["attention/q"].shape[2] ** -0.5))
        return tuple(storage.to_torch(f["attention/" + n], torch) for n in "qkv") + (scale,)


def _on_device(qkv, dev, torch, first):
    """One copy of the inputs on the replay device, in memory of its own (rotated copies never
    share): a device tensor is a fresh one. On the CPU the first copy is the loaded tensors
    themselves, which map the file copy-on-write (a kernel writing into its inputs changes only
    its private pages): at block24 cloning them cost 5.7 s of 2 cores' time before any call."""
    if dev == "cuda":
        return tuple(transfer.to_device(t, torch) for t in qkv)
    return tuple(qkv) if first else tuple(t.clone() for t in qkv)


def pick_device(device, torch):
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise CaptureError("--device cuda: no CUDA device here")
    if device not in ("cpu", "cuda"):
        raise CaptureError(f"--device {device!r}: expected auto, cpu or cuda")
    return device


def time_calls(fn, inputs, reps, warmup, device, torch):
    """(samples in ms, clock name) of one kernel (time_rounds with one)."""
    ms, clock = time_rounds([fn], [[args] for args in inputs], reps, warmup, device, torch)
    return ms[0], clock


def _round(n, r):
    """The kernels' order in round r: forwards in even rounds, backwards in odd ones."""
    return range(n) if r % 2 == 0 else range(n - 1, -1, -1)


def time_rounds(fns, inputs, reps, warmup, device, torch):
    """Interleaved timing of several kernels in one timing run: `warmup` untimed rounds, then
    `reps` rounds, K1 K2 ... Kn in even rounds and Kn ... K1 in odd ones (whatever a position in
    the round gains, a cache the previous call left warm, a clock ramping up, falls on every
    kernel alike), each call on the next of the rotated input copies (so no call runs on the
    inputs the previous call left in cache), each timed on its own. inputs[c][j]: kernel j's
    arguments from copy c (each kernel's layout of the same tensors). Sample i of every kernel
    comes from round i. Returns ([samples in ms per kernel], clock name)."""
    call = 0
    for _ in range(warmup):
        for j, fn in enumerate(fns):
            fn(*inputs[call % len(inputs)][j])
            call += 1
    ms = [[] for _ in fns]
    if device == "cuda":
        torch.cuda.synchronize()
        for r in range(reps):
            for j in _round(len(fns), r):
                fn = fns[j]
                start, stop = (torch.cuda.Event(enable_timing=True) for _ in range(2))
                start.record()
                fn(*inputs[call % len(inputs)][j])
                stop.record()
                stop.synchronize()
                ms[j].append(start.elapsed_time(stop))
                call += 1
        return ms, tables.CLOCK_DEVICE
    for r in range(reps):
        for j in _round(len(fns), r):
            fn = fns[j]
            t0 = time.perf_counter_ns()
            fn(*inputs[call % len(inputs)][j])
            ms[j].append((time.perf_counter_ns() - t0) / 1e6)
            call += 1
    return ms, tables.CLOCK_HOST


def _names(kernels_, name):
    if name is None:
        names = [k.name for k in kernels_]
    elif isinstance(name, str):
        names = [name]
    else:
        names = list(name)
    if len(names) != len(kernels_):
        raise CaptureError(f"{len(names)} --name for {len(kernels_)} --kernel: give none (each "
                           "kernel's own name) or one per kernel, in order")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise CaptureError(f"output name {dup[0]!r} twice in one replay (--name gives each "
                           "kernel its own)")
    return names


def replay(fixture, kernel, *, name=None, device="auto", reps=tables.REPLAY_TIMING["reps"],
           warmup=tables.REPLAY_TIMING["warmup"], rotate=tables.REPLAY_TIMING["rotate"], dump=False,
           compress=False, torch=None, skip_failing=False):
    """Runs `kernel` (a kernels.Kernel, or a list of them: timed interleaved in one timing run)
    on the fixture, stores /outputs/<name>/attention and /timings/<name> for each (in one write)
    and returns a summary dict (for a list: {"timing_run", ..., "kernels": [one per kernel]}).
    name: the output name (a list with a list of kernels; default each kernel's name).
    skip_failing (several kernels, warmup >= 1): a kernel that fails to build or in the first
    warm-up round is left out of the timing run (result "skipped": {name: error}) instead of
    failing the whole run; one failing later still fails it."""
    if torch is None:
        with phase("import torch"):
            import torch
    several = isinstance(kernel, (list, tuple))
    ks = list(kernel) if several else [kernel]
    if not ks:
        raise CaptureError("no kernel to replay")
    names = _names(ks, name)
    if dump and not all(k.is_sage_preset for k in ks):
        bad = next(k.name for k in ks if not k.is_sage_preset)
        raise CaptureError(f"--dump needs sageattn_<preset> kernels, not {bad!r}")
    if reps < 1 or warmup < 0 or rotate < 1:
        raise CaptureError("--reps and --rotate must be >= 1, --warmup >= 0")
    if skip_failing and warmup < 1:
        raise CaptureError("--skip-failing needs --warmup >= 1 (a kernel is tried in warm-up)")
    with phase("device"):
        dev = pick_device(device, torch)
    with phase("load q k v"):
        q, k, v, scale = load_qkv(fixture, torch)
    ctx = {"fixture": fixture, "device": dev}
    skipped = {}
    fns = []
    with phase("kernels built"):
        for kern in ks:
            try:
                fns.append(kern.make(torch, ctx))
            except (CaptureError, ImportError, RuntimeError) as e:
                if not skip_failing:
                    raise
                fns.append(None)
                skipped[kern.name] = f"{type(e).__name__}: {e}"
    with phase("inputs on the device"):
        base = [_on_device((q, k, v), dev, torch, c == 0) for c in range(rotate)]
        copies = {lay: [tuple(layouts.from_shd(t, lay) for t in c) + (scale,) for c in base]
                  for lay in {kern.layout for kern in ks}}

    def guarded(kern, fn):
        def call(*args):
            try:
                return fn(*args)
            except CaptureError:
                raise
            except Exception as e:  # a kernel failing is reported as such, in one line
                raise CaptureError(f"kernel {kern.name!r} raised {type(e).__name__}: {e}") from e
        return call

    if skip_failing:
        for j, (kern, fn) in enumerate(zip(ks, fns)):  # the first warm-up round, one by one
            if fn is None:
                continue
            try:
                prep = getattr(fn, "touchstone_prepare", None)
                if prep is not None:
                    prep(copies[kern.layout][0][0])
                fn(*copies[kern.layout][j % rotate])
                if dev == "cuda":
                    torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001 — reported in the result, the run goes on
                skipped[kern.name] = f"{type(e).__name__}: {e}"
                fns[j] = None
        keep = [j for j, fn in enumerate(fns) if fn is not None]
        if not keep:
            raise CaptureError("every kernel failed: " + "; ".join(f"{n}: {e}" for n, e in skipped.items()))
        ks, fns, names = [ks[j] for j in keep], [fns[j] for j in keep], [names[j] for j in keep]
        warmup -= 1
    calls = [guarded(kern, fn) for kern, fn in zip(ks, fns)]
    inputs = [[copies[kern.layout][c] for kern in ks] for c in range(rotate)]
    try:
        with phase("prepare"):
            for kern, fn in zip(ks, fns):  # what a kernel builds from its inputs once (a block mask)
                prep = getattr(fn, "touchstone_prepare", None)
                if prep is not None:
                    guarded(kern, prep)(copies[kern.layout][0][0])
        with phase(f"warm-up and timed rounds ({warmup} + {reps})"):
            ms, clock = time_rounds(calls, inputs, reps, warmup, dev, torch)
        with phase("the stored call"):
            outs, infos = [], []
            for kern, call, fn in zip(ks, calls, fns):
                args = copies[kern.layout][0]
                outs.append(call(*args))
                info = getattr(fn, "touchstone_info", None)
                infos.append(guarded(kern, info)(*args) if info is not None else {})
            if dev == "cuda":
                torch.cuda.synchronize()
    except RuntimeError as e:  # a device error surfaces at the next synchronisation
        raise CaptureError(f"a kernel of {', '.join(names)} failed on the device: {e}") from e
    device_name = torch.cuda.get_device_name() if dev == "cuda" else "cpu"
    run_id = uuid.uuid4().hex
    entries, results = [], []
    for j, (kern, fn, out, info) in enumerate(zip(ks, fns, outs, infos)):
        want = tuple(copies[kern.layout][0][0].shape)
        if not hasattr(out, "shape") or tuple(out.shape) != want:
            raise CaptureError(f"kernel {kern.name!r} returned "
                               f"{tuple(out.shape) if hasattr(out, 'shape') else type(out).__name__}"
                               f", expected {kern.layout} {want} like q")
        o = layouts.to_shd(out, kern.layout, 0, "output")
        dumped = sage.intermediates(kern.name, *(layouts.from_shd(t.to(dev), "BHSD")
                                                 for t in (q, k, v)), torch) if dump else {}
        params = {"backend": "torch", "kernel": kern.name, "spec": kern.spec,
                  "torch": torch.__version__, "device": device_name, "layout": kern.layout,
                  "reps": reps, "warmup": warmup, "rotate": rotate}
        if kern.params:
            params["kernel_params"] = kern.params
        versions = getattr(fn, "touchstone_versions", None)
        if versions:
            params["versions"] = versions
        if info:
            params["kernel_info"] = info
        if len(ks) > 1:
            params["interleaved_with"] = [n for n in names if n != names[j]]
        tattrs = {tables.TIMING_ATTRS["timing_run"]: run_id, "device": device_name, "round_order": j}
        entries.append(dict(name=names[j], tensor=o, timings_ms=ms[j], clock=clock,
                            params=params, intermediates=dumped, timing_attrs=tattrs))
        results.append({"fixture": fixture, "name": names[j], "kernel": kern.name,
                        "spec": kern.spec, "device": device_name, "clock": clock, "reps": reps,
                        "median_ms": float(np.median(ms[j])), "samples_ms": ms[j],
                        "timing_run": run_id, "round_order": j,
                        "output": f"/outputs/{names[j]}/attention",
                        "timings": f"/timings/{names[j]}", "intermediates": sorted(dumped),
                        "info": info})
    with phase("write outputs"):
        add_outputs(fixture, entries, compress=compress)
    if not several:
        return results[0]
    return {"fixture": fixture, "timing_run": run_id, "device": device_name, "clock": clock,
            "reps": reps, "warmup": warmup + (1 if skip_failing else 0), "rotate": rotate,
            "round_order": names, "kernels": results, "skipped": skipped}


def summary_line(r, columns=None):
    """replay's result as text: one line per kernel (under a line for the timing run when there
    are several), each fitted to the terminal (touchstone.terminal)."""
    if "kernels" in r:
        lines = [(f"{r['fixture']}: timing run {r['timing_run']}: {len(r['kernels'])} kernels "
                  f"interleaved over {r['reps']} rounds ({r['clock']}, {r['device']})", "")]
        lines += [(_kernel_text(k), "  ") for k in r["kernels"]]
        lines += [(f"skipped {n}: {e}", "  ") for n, e in r.get("skipped", {}).items()]
    else:
        lines = [(f"{r['fixture']}: {_kernel_text(r)}", "")]
    return "\n".join(terminal.fill(text, columns, indent) for text, indent in lines)


def _kernel_text(r):
    return (f"{r['name']}: median {r['median_ms']:.3f} ms over {r['reps']} runs "
            f"({r['clock']}, {r['device']}) -> {r['output']}, {r['timings']}"
            + (f", {len(r['intermediates'])} intermediates" if r["intermediates"] else ""))


def to_json(r):
    return json.dumps(r, indent=2)
