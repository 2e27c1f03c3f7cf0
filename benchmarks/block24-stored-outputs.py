#!/usr/bin/env python3
"""Stored outputs for `touchstone bench io` at block24 on a machine without a GPU: a float64
stand-in "ref" for the exact reference, a baseline "base" and N candidates c00.. (the fixture's
storage type), each the fixture's q plus its own noise, base and the candidates timed in one interleaved timing run (host
clock). Their figures mean nothing; their bytes are a real gate's (what bench io measures).
"ref" is not named exact: that name is reserved for the exact reference itself, which gates take
without being asked (docs/fixture-format.md).

usage: benchmarks/block24-stored-outputs.py FIXTURE [--candidates N] [--seed S]
example: touchstone fixture synth --preset block24 --seed 1 -o b24.h5 &&
         PYTHONPATH=python benchmarks/block24-stored-outputs.py b24.h5 --candidates 19 &&
         touchstone bench io b24.h5 --baseline base --exact ref --json io.json
"""
import argparse
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("fixture")
    ap.add_argument("--candidates", type=int, default=19, help="how many candidates (default 19)")
    ap.add_argument("--seed", type=int, default=7, help="the noise's seed (default 7)")
    a = ap.parse_args()
    if a.candidates < 1:
        sys.exit("block24-stored-outputs.py: --candidates must be at least 1")
    # Imported once the arguments are known: --help needs none of them.
    import h5py
    import numpy as np
    from touchstone import fixture_io

    with h5py.File(a.fixture, "r") as f:
        q = f["/attention/q"]
        raw = q[...]
        kind = str(q.attrs.get("dtype", ""))
    ref = (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64) \
        if kind == "bfloat16" else raw.astype(np.float64)
    rng = np.random.default_rng(a.seed)
    fixture_io.add_output(a.fixture, "ref", ref)
    # One output a write (each is 2 to 4 GB as float64 in memory); their samples share one
    # timing run, paired by index as an interleaved run's are.
    for i, name in enumerate(["base"] + [f"c{i:02d}" for i in range(a.candidates)]):
        noise = rng.standard_normal(ref.shape, dtype=np.float32)
        scale = 0.004 if i < 2 else 0.05 * i
        fixture_io.add_output(a.fixture, name, ref + scale * noise,
                              timings_ms=50.0 + rng.random(10), clock="host_steady",
                              timing_attrs={"timing_run": "r1", "round_order": "interleaved"})
        print(f"block24-stored-outputs: {name} written", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
