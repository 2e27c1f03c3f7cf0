"""Replaying a kernel on a fixture's q, k, v and storing its output and timings (add_output).

Timing: after `warmup` calls, `reps` calls cycling through `rotate` copies of the inputs (so no
call runs on inputs the previous one left in cache), each timed on its own: by CUDA events on a
GPU (clock "device_events"), by the host's monotonic clock around the call on the CPU (clock
"host_steady"; CPU torch ops have finished when they return). The stored output comes from one
more call, after timing."""
import json
import time

import h5py
import numpy as np

from . import layouts, sage, storage, tables
from .fixture_io import _fixture_geometry, add_output
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


def pick_device(device, torch):
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise CaptureError("--device cuda: no CUDA device here")
    if device not in ("cpu", "cuda"):
        raise CaptureError(f"--device {device!r}: expected auto, cpu or cuda")
    return device


def time_calls(fn, inputs, reps, warmup, device, torch):
    """(samples in ms, clock name)."""
    for i in range(warmup):
        fn(*inputs[i % len(inputs)])
    if device == "cuda":
        torch.cuda.synchronize()
        ms = []
        for i in range(reps):
            start, stop = (torch.cuda.Event(enable_timing=True) for _ in range(2))
            start.record()
            fn(*inputs[i % len(inputs)])
            stop.record()
            stop.synchronize()
            ms.append(start.elapsed_time(stop))
        return ms, "device_events"
    ms = []
    for i in range(reps):
        t0 = time.perf_counter_ns()
        fn(*inputs[i % len(inputs)])
        ms.append((time.perf_counter_ns() - t0) / 1e6)
    return ms, "host_steady"


def replay(fixture, kernel, *, name=None, device="auto", reps=tables.REPLAY_TIMING["reps"],
           warmup=tables.REPLAY_TIMING["warmup"], rotate=tables.REPLAY_TIMING["rotate"], dump=False,
           compress=False, torch=None):
    """Runs `kernel` (a kernels.Kernel) on the fixture, stores /outputs/<name>/attention and
    /timings/<name>; returns a summary dict."""
    if torch is None:
        import torch
    if dump and not kernel.is_sage_preset:
        raise CaptureError(f"--dump needs a sageattn_<preset> kernel, not {kernel.name!r}")
    if reps < 1 or warmup < 0 or rotate < 1:
        raise CaptureError("--reps and --rotate must be >= 1, --warmup >= 0")
    name = name or kernel.name
    dev = pick_device(device, torch)
    q, k, v, scale = load_qkv(fixture, torch)
    fn = kernel.make(torch)
    copies = []
    for _ in range(rotate):
        qs, ks, vs = (t.to(dev).clone() for t in (q, k, v))
        copies.append(tuple(layouts.from_shd(t, kernel.layout) for t in (qs, ks, vs)) + (scale,))

    def call(*args):
        try:
            return fn(*args)
        except CaptureError:
            raise
        except Exception as e:  # a user's kernel failing is reported as such, in one line
            raise CaptureError(f"kernel {kernel.name!r} raised {type(e).__name__}: {e}") from e

    try:
        ms, clock = time_calls(call, copies, reps, warmup, dev, torch)
        out = call(*copies[0])
        if dev == "cuda":
            torch.cuda.synchronize()
    except RuntimeError as e:  # a device error surfaces at the next synchronisation
        raise CaptureError(f"kernel {kernel.name!r} failed on the device: {e}") from e
    if not hasattr(out, "shape") or tuple(out.shape) != tuple(copies[0][0].shape):
        raise CaptureError(f"kernel {kernel.name!r} returned "
                           f"{tuple(out.shape) if hasattr(out, 'shape') else type(out).__name__}, "
                           f"expected {kernel.layout} {tuple(copies[0][0].shape)} like q")
    o = layouts.to_shd(out, kernel.layout, 0, "output")
    dumped = sage.intermediates(kernel.name, *(layouts.from_shd(t.to(dev), "BHSD")
                                               for t in (q, k, v)), torch) if dump else {}
    params = {"backend": "torch", "kernel": kernel.name, "torch": torch.__version__,
              "device": torch.cuda.get_device_name() if dev == "cuda" else "cpu",
              "layout": kernel.layout, "reps": reps, "warmup": warmup, "rotate": rotate}
    add_output(fixture, name, o, ms, clock, params=params, intermediates=dumped, compress=compress)
    return {"fixture": fixture, "name": name, "kernel": kernel.name, "device": params["device"],
            "clock": clock, "reps": reps, "median_ms": float(np.median(ms)), "samples_ms": ms,
            "output": f"/outputs/{name}/attention", "timings": f"/timings/{name}",
            "intermediates": sorted(dumped)}


def summary_line(r):
    return (f"{r['fixture']}: {r['name']}: median {r['median_ms']:.3f} ms over {r['reps']} runs "
            f"({r['clock']}, {r['device']}) -> {r['output']}, {r['timings']}"
            + (f", {len(r['intermediates'])} intermediates" if r["intermediates"] else ""))


def to_json(r):
    return json.dumps(r, indent=2)
