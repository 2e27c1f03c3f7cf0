#!/usr/bin/env python3
"""Runs the malformed-input corpus: every tests/corpus/gen_*.py writes its
files and OUTDIR/cases.jsonl into a fresh temporary folder; every case must
exit 2 with exactly one line on stderr and leave each listed file
byte-identical. Usage: run_corpus.py BUILD_TOUCHSTONE [--keep]"""
import concurrent.futures
import glob
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT_S = 120


def digest(path):
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError as e:
        return f"unreadable: {e.strerror}"


def snapshot(paths):
    return {p: (digest(p) if os.path.lexists(p) else None) for p in paths}


def run_case(case, touchstone):
    """A list of what went wrong ([] when the case passed)."""
    argv = [a.replace("{touchstone}", touchstone) for a in case["argv"]]
    before = snapshot(case.get("files", []))
    env = dict(os.environ, TOUCHSTONE_NO_PROGRESS="1")
    try:
        p = subprocess.run(argv, capture_output=True, timeout=TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        return [f"no answer within {TIMEOUT_S} s"]
    problems = []
    if p.returncode != 2:
        problems.append(f"exit {p.returncode} (signal {-p.returncode})" if p.returncode < 0
                        else f"exit {p.returncode}, expected 2")
    lines = p.stderr.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if len(lines) != 1 or not p.stderr.endswith(b"\n"):
        problems.append(f"{len(lines)} lines on stderr, expected 1")
    after = snapshot(case.get("files", []))
    for path in before:
        if before[path] != after[path]:
            problems.append(f"{path} changed" if after[path] else f"{path} removed")
    if problems:
        shown = p.stderr[:600].decode("utf-8", "backslashreplace")
        problems.append("stderr: " + (shown if shown else "(empty)"))
    return problems


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: run_corpus.py BUILD_TOUCHSTONE [--keep]")
    touchstone = os.path.abspath(sys.argv[1])
    keep = "--keep" in sys.argv[2:]
    gens = sorted(glob.glob(os.path.join(HERE, "gen_*.py")))
    if not gens:
        sys.exit("run_corpus: no tests/corpus/gen_*.py")
    top = tempfile.mkdtemp(prefix="ts_corpus_")
    total = passed = 0
    failures = []
    start = time.monotonic()
    for gen in gens:
        name = os.path.splitext(os.path.basename(gen))[0]
        out = os.path.join(top, name)
        os.makedirs(out)
        g = subprocess.run([sys.executable, gen, out], capture_output=True, text=True)
        if g.returncode != 0:
            failures.append((name, [f"generator failed (exit {g.returncode}): {g.stderr.strip()[-600:]}"]))
            total += 1
            continue
        with open(os.path.join(out, "cases.jsonl")) as f:
            cases = [json.loads(line) for line in f if line.strip()]
        n_ok = 0
        # One case per core at a time: each is one short process.
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            results = list(pool.map(lambda c: run_case(c, touchstone), cases))
        for case, problems in zip(cases, results):
            total += 1
            if problems:
                failures.append((f"{name}:{case['name']}", problems))
            else:
                passed += 1
                n_ok += 1
        print(f"{name}: {n_ok} of {len(cases)} exit 2 with one line")
    for label, problems in failures:
        print(f"FAIL {label}")
        for p in problems:
            print(f"    {p}")
    if keep:
        print(f"corpus kept in {top}")
    else:
        subprocess.run(["rm", "-rf", top])
    print(f"{passed} passed, {total - passed} failed ({time.monotonic() - start:.0f} s)")
    print(f"corpus: {passed} of {total} exit 2 with one line")
    sys.exit(0 if passed == total and total > 0 else 1)


if __name__ == "__main__":
    main()
