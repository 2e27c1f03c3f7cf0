"""Fidelity of touchstone's sage2 emulation against the real SageAttention 2.2.0 kernels
(numerics.md "sage2"), with a trust check on the real kernel first.

On a synthetic fixture (default `ci`: 832 tokens, 4 heads, head_dim 128), for each preset:
the real kernel's output, timings and the codes and scales it consumed (replay
sageattn_<preset> --dump), the emulation with its dump (touchstone reference --backend sage2
--dump), and `touchstone compare --json` of outputs (each also against exact) and of every
intermediate. Each preset gets one status:

  within      the emulation is within the target (output rel_l2 <= 2e-3) of the real kernel;
  OUTSIDE     it is not: an emulation failure;
  MISTRUSTED  the real kernel itself is implausible, so it cannot judge the emulation (benchdnn's
              status for a broken reference): a non-finite output, an output farther from exact
              than `mistrust_ratio` (4) x the emulation's own distance from exact, or a time
              faster than `ceiling_tflops` for the 4*S^2*H*D FLOPs of attention (default: the
              ceiling by which the gate mistrusts a stored kernel's time, tables.py
              MISTRUST_CEILING_TFLOPS, core/timing_defaults.hpp; the real sm90 kernel reaches
              790 TFLOP/s on the H200 at block24).
The run exits 1 when a preset is OUTSIDE (a trusted kernel disagrees with the emulation),
else 2 when one is MISTRUSTED (nothing trustworthy to judge against), else 0.
"""
import json
import math
import os
import subprocess
import sys

from . import kernels, replay, tables
from .fixture_io import read_fixture
from .schema import CaptureError

INTERMEDIATES = ("q_int8", "k_int8", "v_fp8", "q_scale", "k_scale", "v_scale", "km")
STAND_IN_NOTE = "NOTE: sageattention is a test stand-in, not the real kernels"


def _num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def attention_flops(S, H, D):
    """Dense, non-causal: Q·Kᵀ and P·V, 2·S·S·D each per head."""
    return 4.0 * S * S * H * D


def mistrust_reasons(real_vs_exact, emu_vs_exact, real_nonfinite, median_ms, flops,
                     mistrust_ratio=4.0, ceiling_tflops=tables.MISTRUST_CEILING_TFLOPS):
    """Why a real kernel's result is not a reference (empty: it is plausible)."""
    why = []
    if real_nonfinite:
        why.append(f"{real_nonfinite} non-finite output value(s)")
    if not _num(real_vs_exact):
        why.append(f"rel_l2 vs exact is {real_vs_exact}")
    elif _num(emu_vs_exact) and real_vs_exact > mistrust_ratio * emu_vs_exact:
        why.append(f"rel_l2 vs exact {real_vs_exact:.3g} is {real_vs_exact / emu_vs_exact:.1f}x the "
                   f"emulation's {emu_vs_exact:.3g} (limit {mistrust_ratio:g}x)")
    if _num(median_ms) and median_ms > 0:
        tflops = flops / (median_ms * 1e-3) / 1e12
        if tflops > ceiling_tflops:
            why.append(f"{median_ms:.3g} ms is {tflops:.0f} TFLOP/s for {flops / 1e12:.3g} TFLOP "
                       f"(ceiling {ceiling_tflops:g})")
    elif median_ms is not None:
        why.append(f"median time {median_ms} ms")
    return why


def status_of(output_rel_l2, target, reasons):
    if reasons:
        return "MISTRUSTED"
    return "within" if _num(output_rel_l2) and output_rel_l2 <= target else "OUTSIDE"


class _Touchstone:
    def __init__(self, exe):
        if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
            raise CaptureError(f"{exe}: no touchstone binary (build first)")
        self.exe = exe

    def __call__(self, *args, json_out=False):
        r = subprocess.run([self.exe, *args], capture_output=True, text=True)
        if r.returncode != 0:
            raise CaptureError(f"touchstone {' '.join(args)}: exit {r.returncode}: "
                               f"{r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ''}")
        return json.loads(r.stdout) if json_out else r.stdout


def run(touchstone, out, presets=tables.SAGE2_ONE_PER_FUNCTION, target=2e-3, seed=7, fixture_preset="ci",
        device="auto", reps=5, mistrust_ratio=4.0, ceiling_tflops=tables.MISTRUST_CEILING_TFLOPS,
        log=sys.stderr):
    """Runs the check; returns (report dict, exit code 0 / 1 / 2)."""
    ts = _Touchstone(touchstone)
    for p in presets:
        kernels.resolve(f"sageattn_{p}")  # an unknown preset is bad input before anything runs
    try:
        import sageattention
    except ImportError:
        raise CaptureError(f"skipped: the sageattention module (2.2.0) is not installed for "
                           f"{sys.executable}")
    stand_in = bool(getattr(sageattention, "__touchstone_stand_in__", False))
    if stand_in:
        print(f"sage-fidelity: {STAND_IN_NOTE}", file=log)
    os.makedirs(out, exist_ok=True)
    f = os.path.join(out, f"fidelity_{fixture_preset}.h5")
    if os.path.exists(f):  # this run's own scratch fixture: a fresh one each time
        os.remove(f)
    ts("fixture", "synth", "--force", "--preset", fixture_preset, "--seed", str(seed), "-o", f)
    ts("reference", f, "--backend", "exact")
    rows = []
    for p in presets:
        real = f"sageattn_{p}"
        r = replay.replay(f, kernels.resolve(real), device=device, reps=reps, dump=True)
        print(replay.summary_line(r), file=log)
        ts("reference", f, "--backend", "sage2", "--preset", p, "--dump")
        m = {}
        for what, a, b in (("output", f"sage2_{p}", real), ("real_vs_exact", real, "exact"),
                           ("emu_vs_exact", f"sage2_{p}", "exact")):
            m[what] = ts("compare", f, a, b, "--json", json_out=True)["metrics"]
        with open(os.path.join(out, f"{p}.json"), "w") as fh:
            json.dump(m, fh, indent=2)
        S, H, D = read_fixture(f).q.shape
        row = {"preset": p, "output_rel_l2": m["output"]["rel_l2"],
               "real_vs_exact_rel_l2": m["real_vs_exact"]["rel_l2"],
               "emulation_vs_exact_rel_l2": m["emu_vs_exact"]["rel_l2"],
               "real_nonfinite": m["real_vs_exact"].get("nonfinite", 0),
               "real_median_ms": r["median_ms"], "real_clock": r["clock"],
               "real_tflops": attention_flops(S, H, D) / (r["median_ms"] * 1e-3) / 1e12}
        for t in INTERMEDIATES:
            mt = ts("compare", f, f"/outputs/sage2_{p}/intermediates/{t}",
                    f"/outputs/{real}/intermediates/{t}", "--json", json_out=True)["metrics"]
            row[t] = {"identical_fraction": mt["identical_fraction"], "ulp_max": mt["ulp_max"]}
        row["mistrusted_because"] = mistrust_reasons(
            row["real_vs_exact_rel_l2"], row["emulation_vs_exact_rel_l2"], row["real_nonfinite"],
            r["median_ms"], attention_flops(S, H, D), mistrust_ratio, ceiling_tflops)
        row["status"] = status_of(row["output_rel_l2"], target, row["mistrusted_because"])
        row["within_target"] = row["status"] == "within"
        rows.append(row)
    report = {"target_rel_l2": target, "stand_in": stand_in, "fixture_preset": fixture_preset,
              "mistrust_ratio": mistrust_ratio, "ceiling_tflops": ceiling_tflops, "presets": rows}
    with open(os.path.join(out, "sage_fidelity.json"), "w") as fh:
        json.dump(report, fh, indent=2)
    return report, exit_code(row["status"] for row in rows)


def exit_code(statuses):
    """0 every preset within; 1 one OUTSIDE (the emulation fails against a trusted kernel);
    2 otherwise a MISTRUSTED one (nothing trustworthy to judge the emulation against)."""
    s = set(statuses)
    return 1 if "OUTSIDE" in s else 2 if "MISTRUSTED" in s else 0


def _pct(x):
    return f"{100 * x:.2f}%" if _num(x) else str(x)


def _g(x, spec=".3e"):
    return format(x, spec) if _num(x) else str(x)


def table(report):
    lines = [f"{'preset':7} {'emu vs real':>11} {'target':>7} {'real/exact':>10} {'emu/exact':>9} "
             f"{'q8 same':>8} {'k8 same':>8} {'v8 same':>8} "
             f"{'scales same (max ulp) q / k / v':>34}  status"]
    for r in report["presets"]:
        sc = " / ".join(f"{_pct(r[t]['identical_fraction'])} ({_g(r[t]['ulp_max'], 'g')})"
                        for t in ("q_scale", "k_scale", "v_scale"))
        lines.append(
            f"{r['preset']:7} {_g(r['output_rel_l2']):>11} {report['target_rel_l2']:7.0e} "
            f"{_g(r['real_vs_exact_rel_l2']):>10} {_g(r['emulation_vs_exact_rel_l2']):>9} "
            f"{_pct(r['q_int8']['identical_fraction']):>8} {_pct(r['k_int8']['identical_fraction']):>8} "
            f"{_pct(r['v_fp8']['identical_fraction']):>8} {sc:>34}  {r['status']}")
    for r in report["presets"]:
        if r["status"] == "MISTRUSTED":
            lines.append(f"{r['preset']}: MISTRUSTED real kernel (a broken reference, not an "
                         f"emulation failure): {'; '.join(r['mistrusted_because'])}; "
                         f"{r['real_median_ms']:.3g} ms median ({r['real_clock']}), "
                         f"{r['real_tflops']:.3g} TFLOP/s")
    if report["stand_in"]:
        lines.append("NOTE: a test stand-in for sageattention: these figures check the plumbing, "
                     "not the emulation")
    return "\n".join(lines)
