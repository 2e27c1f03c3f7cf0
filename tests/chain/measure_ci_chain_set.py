#!/usr/bin/env python3
"""The chain measurement CI makes: an 8-block x 4-step chain set at ci geometry, synthesized,
and `touchstone policy` over it (every 'dense if step<k; sol:tau=1.3,precision=int8_qk'
schedule, k = 0..3, and all dense), on the CPU emulations.

Prints the error against the baseline stack after every block and step of the all-sol schedule
and each schedule's end figures, writes them as JSON (--out), and fails (exit 1) where the
result breaks what the chain must hold:
  - every schedule has one cell per block x step (32);
  - a dense cell before any sol cell is the baseline itself (rel_l2 0), a sol cell is not;
  - every error is finite, and the growth factor is given (finite) wherever error came in;
  - error is carried: the all-sol schedule's error after the last block exceeds its own
    per-block error at block 0, step 0;
  - the dense-equivalent work grows with k (more dense steps cost more).

usage: measure_ci_chain_set.py TOUCHSTONE WORK_DIR [--out JSON]
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time

BLOCKS, STEPS, TAU = 8, 4, 1.3
SOL = f"sol:tau={TAU},precision=int8_qk"


def run(cmd):
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p, time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("touchstone")
    ap.add_argument("work")
    ap.add_argument("--out", default=None, help="where the figures go as JSON (default WORK/chain_set_ci_8x4.json)")
    a = ap.parse_args()
    out = a.out or os.path.join(a.work, "chain_set_ci_8x4.json")
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    set_dir = os.path.join(a.work, "set")
    p, synth_s = run([a.touchstone, "fixture", "synth", "--preset", "ci", "--seed", "1", "--blocks", str(BLOCKS),
                      "--steps", str(STEPS), "-o", set_dir])
    if p.returncode != 0:
        sys.exit(f"synth failed (exit {p.returncode}): {p.stderr.strip()}")
    pj = os.path.join(a.work, "policy.json")
    p, policy_s = run([a.touchstone, "policy", set_dir, "--tau", str(TAU), "--accuracy-only", "--json", pj,
                       "--html", os.path.join(a.work, "policy.html")])
    if p.returncode not in (0, 1):
        sys.exit(f"policy failed (exit {p.returncode}): {p.stderr.strip()}")
    d = json.load(open(pj))
    problems = []
    if (d["set"]["blocks"], d["set"]["steps"]) != (BLOCKS, STEPS):
        problems.append(f"set is {d['set']['blocks']} x {d['set']['steps']}, not {BLOCKS} x {STEPS}")
    chains = {c["schedule"]: c for c in d["chains"]}
    for name, c in chains.items():
        cells = c["cells"]
        if len(cells) != BLOCKS * STEPS:
            problems.append(f"{name}: {len(cells)} cells, not {BLOCKS * STEPS}")
        sol_seen = False
        for cell in sorted(cells, key=lambda x: (x["step"], x["block"])):
            where = f"{name}: block {cell['block']} step {cell['step']}"
            e = cell["vs_baseline"]["rel_l2"]
            if not (isinstance(e, float) or isinstance(e, int)) or not math.isfinite(e):
                problems.append(f"{where}: rel_l2 vs baseline {e!r} is not finite")
                continue
            sol_seen = sol_seen or not cell["dense"]
            if cell["dense"] and not sol_seen and e != 0:
                problems.append(f"{where}: dense before any sol cell but rel_l2 {e} vs the baseline stack")
            if not cell["dense"] and e == 0:
                problems.append(f"{where}: a sol cell equal to the baseline stack")
            if cell["in_error"] > 0 and (cell["growth"] is None or not math.isfinite(cell["growth"])):
                problems.append(f"{where}: error came in ({cell['in_error']}) but growth is {cell['growth']!r}")
    works = []
    for k in range(STEPS):
        name = SOL if k == 0 else f"dense if step<{k}; {SOL}"
        if name not in chains:
            problems.append(f"policy did not judge '{name}'")
        else:
            works.append(chains[name]["work"])
    if any(b <= a_ for a_, b in zip(works, works[1:])):
        problems.append(f"dense-equivalent work does not grow with k: {works}")
    sol = chains.get(SOL)
    rows = []
    if sol:
        last = max(sol["cells"], key=lambda x: (x["step"], x["block"]))
        first = min(sol["cells"], key=lambda x: (x["step"], x["block"]))
        if not last["vs_baseline"]["rel_l2"] > first["own"]:
            problems.append(f"{SOL}: error after the last block {last['vs_baseline']['rel_l2']} is not above "
                            f"its own first-block error {first['own']}: nothing carried")
        print(f"{SOL}: rel_l2 against the baseline stack after each block (rows: steps)")
        print("step  " + " ".join(f"blk{b:<3d}" for b in range(BLOCKS)))
        for s in range(STEPS):
            line = [c for c in sol["cells"] if c["step"] == s]
            line.sort(key=lambda x: x["block"])
            print(f"{s:4d}  " + " ".join(f"{c['vs_baseline']['rel_l2']:.4f}" for c in line))
    print(f"\n{'schedule':52s} {'work':>6s} {'end rel_l2':>10s}  verdict")
    for name, c in chains.items():
        last = max(c["cells"], key=lambda x: (x["step"], x["block"]))
        end = last["vs_baseline"]["rel_l2"]
        verdict = c["verdict"].get("verdict", "?")
        rows.append({"schedule": name, "work": c["work"], "end_rel_l2_vs_baseline": end,
                     "end_rel_l2_vs_exact": last["vs_exact"]["rel_l2"], "verdict": verdict})
        print(f"{name:52s} {c['work']:6.3f} {end:10.4f}  {verdict}")
    print(f"\nchosen: {d.get('chosen')}; synth {synth_s:.1f} s, policy {policy_s:.1f} s "
          f"({d['block_runs']} block runs)")
    summary = {"schema": "touchstone.ci_chain_measurement/1", "set": {"preset": "ci", "blocks": BLOCKS, "steps": STEPS},
               "wall_s": {"synth": synth_s, "policy": policy_s}, "block_runs": d["block_runs"],
               "chosen": d.get("chosen"), "schedules": rows,
               "sol_rel_l2_after_each_block": [
                   {"step": c["step"], "block": c["block"], "rel_l2": c["vs_baseline"]["rel_l2"], "own": c["own"],
                    "growth": c["growth"]} for c in sorted(sol["cells"], key=lambda x: (x["step"], x["block"]))]
               if sol else [], "problems": problems}
    with open(out, "w") as f:
        json.dump(summary, f, indent=2)
    print(f"wrote {out}")
    for pr in problems:
        print(f"FAILED: {pr}", file=sys.stderr)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
