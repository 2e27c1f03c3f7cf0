#!/usr/bin/env python3
"""The all-real seed table from benchmarks/gpu-real-seed-table's outputs: one row per stored kernel
(and per sol emulation with compensation off), with density, median ms, speedup vs the real Sage
kernel with its interval, rel_l2 to Sage, to exact and (sol's routing through a real kernel) to
sol with compensation off, the verdicts under sparse_acceptance and sage_compat; per tau what
compensation is worth; one sentence: is any row both faster and Sage-like. Writes
real_seed_table.{txt,md,html,json} into --out and prints the text table."""
import argparse
import datetime
import html
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))


def _load(path):
    with open(path) as fh:
        return json.load(fh)


_TENSORS = {}


def _stored(fixture, name, torch):
    """A stored output as stored, read (and its digest checked) once however many rows use it:
    the table's 30 comparisons name 24 outputs, read twice each they cost most of its time."""
    from touchstone import read_tensor

    if name not in _TENSORS:
        dev = "cuda" if torch.cuda.is_available() else "cpu"
        _TENSORS[name] = read_tensor(fixture, f"/outputs/{name}/attention", torch).to(dev)
    return _TENSORS[name]


def _rel_l2(fixture, a, b, torch):
    """||A - B|| / ||B|| of two stored outputs, on a GPU where there is one."""
    x = _stored(fixture, a, torch).float()
    y = _stored(fixture, b, torch).float()
    return float(torch.linalg.norm((x - y).reshape(-1)).double() / torch.linalg.norm(y.reshape(-1)).double())


def _kind(name, routings):
    for r in routings:
        if "_bq64_bk128" in r and name == f"sparge_{r}":
            return "SpargeAttn mask, sol routed on its sm90 grid", r
        if name == r:
            return "sol emulation, compensation off", r
        if name == f"flex_{r}":
            return "FlexAttention, sol's routing", r
        if name == f"sparge_{r}":
            return "SpargeAttn mask, sol's routing", r
    if name.startswith("sparge_"):
        return "SpargeAttn, own selection", None
    if name.startswith("sdpa"):
        return "PyTorch SDPA (dense)", None
    return "kernel", None


def _fmt(x, nd=4):
    return "—" if x is None else f"{x:.{nd}g}"


def build(a):
    import torch

    table_t0 = time.time_ns()
    routings = a.routings.split()
    native = a.native.split()
    taus = a.taus.split(",")
    sa = _load(os.path.join(a.out, "gate_sparse_acceptance.json"))
    sc = _load(os.path.join(a.out, "gate_sage_compat.json"))
    sweep = _load(os.path.join(a.out, "sweep_compensation.json"))
    rep = _load(os.path.join(a.out, "replay.json"))
    route_stats = {}
    for tau, r in zip(taus, routings):
        j = _load(os.path.join(a.out, f"route_tau{tau}.json"))
        route_stats[r] = {"tau": float(tau), "density": j["stats"].get("density")}
    for tau, r in zip(taus, native):
        j = _load(os.path.join(a.out, f"route64x128_tau{tau}.json"))
        route_stats[r] = {"tau": float(tau), "density": j["stats"].get("density")}
    sc_by = {c["candidate"]: c for c in sc["candidates"]}
    timed = {k["name"]: k for k in rep["kernels"]}
    base_ms = timed[a.baseline]["median_ms"]
    rows = [{"name": a.baseline, "kind": "the real SageAttention kernel (baseline)", "density": 1.0,
             "median_ms": base_ms, "speedup": 1.0, "speedup_ci": None, "rel_l2_vs_sage": 0.0,
             "rel_l2_vs_exact": _rel_l2(a.fixture, a.baseline, a.exact, torch),
             "rel_l2_vs_sol_nocomp": None, "sparse_acceptance": "—", "sage_compat": "—"}]
    for c in sa["candidates"]:
        name = c["candidate"].split(":", 1)[1]
        kind, r = _kind(name, routings + native)
        d = c.get("details", {})
        speed = d.get("speed") or {}
        iv = speed.get("interval") or {}
        stored = json.loads(d.get("params", {}).get("stored_params", "{}") or "{}")
        info = stored.get("kernel_info", {})
        if name in routings + native:
            density = route_stats[name]["density"]
        elif "pair_density" in info and name.startswith("flex_"):
            density = info["pair_density"]
        elif "computed_pair_density" in info:
            density = info["computed_pair_density"]
        elif "computed_block_density" in info:
            density = info["computed_block_density"]
        else:
            density = 1.0  # the dense kernels of the table
        other = sc_by.get(c["candidate"], {})
        failed = lambda cand: ",".join(x["id"] for x in cand.get("rules", []) if x["status"] != "pass")
        row = {"name": name, "kind": kind, "density": density,
               "median_ms": timed[name]["median_ms"] if name in timed else None,
               "speedup": iv.get("point"), "speedup_ci": [iv["lower"], iv["upper"]] if iv else None,
               "speed_level": speed.get("level"), "clock": c.get("clock"),
               "rel_l2_vs_sage": d.get("vs_baseline", {}).get("rel_l2"),
               "rel_l2_vs_exact": d.get("vs_exact", {}).get("rel_l2"),
               "rel_l2_vs_sol_nocomp": (_rel_l2(a.fixture, name, r, torch) if r and name != r else None),
               "sparse_acceptance": c["verdict"], "sparse_acceptance_not_passed": failed(c),
               "sage_compat": other.get("verdict", "—"), "sage_compat_not_passed": failed(other),
               "kernel_info": info, "routing": r}
        if r:
            row["tau"] = route_stats[r]["tau"]
        rows.append(row)
    for r in routings:  # the emulation the real kernels execute: accuracy only, never timed
        rows.append({"name": r, "kind": "sol emulation, compensation off",
                     "density": route_stats[r]["density"], "median_ms": None, "speedup": None,
                     "speedup_ci": None, "rel_l2_vs_sage": _rel_l2(a.fixture, r, a.baseline, torch),
                     "rel_l2_vs_exact": _rel_l2(a.fixture, r, a.exact, torch),
                     "rel_l2_vs_sol_nocomp": None, "sparse_acceptance": "—", "sage_compat": "—",
                     "tau": route_stats[r]["tau"], "routing": r})
    comp = []
    on = {round(float(x["tau"]), 9): x for x in sweep.get("rows", []) if x.get("tau") is not None}
    by_name = {x["name"]: x for x in rows}
    for tau, r in zip(taus, routings):
        off = by_name.get(r, {})
        x = on.get(round(float(tau), 9), {})
        flex, sparge = by_name.get(f"flex_{r}", {}), by_name.get(f"sparge_{r}", {})
        nat = [n for n in native if route_stats[n]["tau"] == float(tau)]
        sn = by_name.get(f"sparge_{nat[0]}", {}) if nat else {}
        comp.append({"tau": float(tau), "density": route_stats[r]["density"],
                     "rel_l2_vs_exact_compensation_on": x.get("rel_l2_vs_exact"),
                     "rel_l2_vs_exact_compensation_off": off.get("rel_l2_vs_exact"),
                     "rel_l2_vs_sage_compensation_on": x.get("rel_l2_vs_baseline"),
                     "rel_l2_vs_sage_compensation_off": off.get("rel_l2_vs_sage"),
                     "flex_rel_l2_vs_sol_nocomp": flex.get("rel_l2_vs_sol_nocomp"),
                     "sparge_rel_l2_vs_sol_nocomp": sparge.get("rel_l2_vs_sol_nocomp"),
                     "sparge_partial_blocks": sparge.get("kernel_info", {}).get("partial"),
                     "sparge_extra_pairs": sparge.get("kernel_info", {}).get("pairs_extra"),
                     "sparge_native_partial_blocks": sn.get("kernel_info", {}).get("partial"),
                     "sparge_native_rel_l2_vs_sol_nocomp": sn.get("rel_l2_vs_sol_nocomp")})
    both = [x["name"] for x in rows[1:] if x["sparse_acceptance"] == "ACCEPT"]
    if both:
        sentence = (f"Yes: {', '.join(both)} {'is' if len(both) == 1 else 'are'} both faster than "
                    f"the real Sage kernel and Sage-like (sparse_acceptance ACCEPT).")
    else:
        sentence = ("No row is both faster than the real Sage kernel and Sage-like: none is "
                    "ACCEPTed under sparse_acceptance.")
    done = time.time_ns()
    total_s = (done - a.start_ns) / 1e9
    steps = []
    with open(a.steps) as fh:
        for line in fh:
            name, ms, rc = line.rstrip("\n").split("\t")
            steps.append({"step": name, "wall_s": int(ms) / 1000, "exit": int(rc)})
    table_s = (done - table_t0) / 1e9
    commit = os.environ.get("COMMIT", "")
    if not commit:
        try:
            commit = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"],
                                    capture_output=True, text=True).stdout.strip()
        except OSError:
            pass
    return {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "commit": commit or "unknown", "preset": a.preset, "fixture": a.fixture,
            "device": rep["device"], "clock": rep["clock"], "timing_run": rep["timing_run"],
            "reps": rep["reps"], "skipped": rep.get("skipped", {}), "baseline": a.baseline,
            "exact": a.exact, "rows": rows, "compensation": comp, "answer": sentence,
            "wall_s": {"total": total_s, "budget": a.budget_s, "meets": total_s <= a.budget_s,
                       "steps": steps + [{"step": "table", "wall_s": table_s, "exit": 0}]}}


COLUMNS = [("name", "kernel"), ("density", "density"), ("median_ms", "median ms"),
           ("speedup", "speedup vs Sage [95% CI]"), ("rel_l2_vs_sage", "rel_l2 Sage"),
           ("rel_l2_vs_exact", "rel_l2 exact"), ("rel_l2_vs_sol_nocomp", "rel_l2 sol nocomp"),
           ("sparse_acceptance", "sparse_acceptance"), ("sage_compat", "sage_compat")]


def _cell(row, key):
    v = row.get(key)
    if key == "speedup":
        ci = row.get("speedup_ci")
        if row["kind"].startswith("sol emulation"):
            return "— (emulation)"
        return "1" if row.get("speedup_ci") is None and v == 1.0 else (
            "missing" if v is None else f"{v:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else f"{v:.3f}")
    if key in ("sparse_acceptance", "sage_compat"):
        why = [w for w in (row.get(key + "_not_passed") or "").split(",") if w]
        shown = ",".join(why[:2]) + (f",+{len(why) - 2}" if len(why) > 2 else "")
        return f"{v} ({shown})" if why and v != "ACCEPT" else str(v)
    if isinstance(v, float):
        return f"{v:.3f}" if key in ("density", "median_ms") else _fmt(v)
    return "—" if v is None else str(v)


DENSITY_NOTE = ("density: the fraction of (query, key) pairs a kernel computes (SpargeAttn's own "
                "selection: its fraction of blocks); sol rows: the routed fraction of video "
                "blocks, as the seed reports it.")


def text(r):
    cells = [[h for _, h in COLUMNS]] + [[_cell(x, k) for k, _ in COLUMNS] for x in r["rows"]]
    w = [max(len(c[i]) for c in cells) for i in range(len(COLUMNS))]
    lines = [f"all-real seed table, {r['preset']}, {r['device']} ({r['clock']}, one timing run "
             f"{r['timing_run'][:8]}, {r['reps']} rounds), commit {r['commit']}, {r['date']}"]
    for i, c in enumerate(cells):
        lines.append("  ".join(x.ljust(w[j]) for j, x in enumerate(c)).rstrip())
        if i == 0:
            lines.append("  ".join("-" * n for n in w))
    lines.append(DENSITY_NOTE)
    lines.append("")
    lines.append("what compensation is worth (sol emulation, rel_l2 vs exact: on / off); the real "
                 "kernels vs sol with compensation off:")
    for c in r["compensation"]:
        lines.append(f"  tau {c['tau']:g}: density {_fmt(c['density'], 3)}, compensation on "
                     f"{_fmt(c['rel_l2_vs_exact_compensation_on'])} / off "
                     f"{_fmt(c['rel_l2_vs_exact_compensation_off'])}; flex {_fmt(c['flex_rel_l2_vs_sol_nocomp'])}, "
                     f"sparge {_fmt(c['sparge_rel_l2_vs_sol_nocomp'])} from sol nocomp "
                     f"(sparge: {c['sparge_partial_blocks']} grid blocks computed whole past sol's "
                     f"pairs, {c['sparge_extra_pairs']} extra pairs)")
    for n, e in r["skipped"].items():
        lines.append(f"skipped (failed in warm-up): {n}: {e}")
    lines.append("")
    lines.append(r["answer"])
    ws = r["wall_s"]
    lines.append(f"wall {ws['total']:.1f} s (budget {ws['budget']} s: "
                 f"{'meets' if ws['meets'] else 'MISSES'}); " +
                 ", ".join(f"{s['step']} {s['wall_s']:.1f}" for s in ws["steps"]))
    return "\n".join(lines) + "\n"


def markdown(r):
    out = [f"## All-real seed table ({r['preset']}, {r['device']}, commit {r['commit']}, {r['date']})", "",
           f"Baseline: the real kernel `{r['baseline']}`; exact: `{r['exact']}`; every row timed on "
           f"`{r['clock']}` in one timing run (`{r['timing_run']}`, {r['reps']} rounds).", "",
           "| " + " | ".join(h for _, h in COLUMNS) + " |",
           "|" + "---|" * len(COLUMNS)]
    for x in r["rows"]:
        out.append("| " + " | ".join(_cell(x, k).replace("|", "\\|") for k, _ in COLUMNS) + " |")
    out += ["", DENSITY_NOTE]
    out += ["", "| tau | density | sol rel_l2 vs exact, compensation on | off | flex vs sol nocomp | "
                "sparge vs sol nocomp | sparge blocks computed whole |", "|---|---|---|---|---|---|---|"]
    for c in r["compensation"]:
        out.append(f"| {c['tau']:g} | {_fmt(c['density'], 3)} | {_fmt(c['rel_l2_vs_exact_compensation_on'])} | "
                   f"{_fmt(c['rel_l2_vs_exact_compensation_off'])} | {_fmt(c['flex_rel_l2_vs_sol_nocomp'])} | "
                   f"{_fmt(c['sparge_rel_l2_vs_sol_nocomp'])} | {c['sparge_partial_blocks']} |")
    out += ["", f"**{r['answer']}**", "", f"Wall {r['wall_s']['total']:.1f} s (budget {r['wall_s']['budget']} s)."]
    return "\n".join(out) + "\n"


def page(r):
    e = html.escape
    head = "".join(f"<th>{e(h)}</th>" for _, h in COLUMNS)
    body = "".join("<tr>" + "".join(f"<td>{e(_cell(x, k))}</td>" for k, _ in COLUMNS) + "</tr>"
                   for x in r["rows"])
    comp = "".join(f"<tr><td>{c['tau']:g}</td><td>{e(_fmt(c['density'], 3))}</td>"
                   f"<td>{e(_fmt(c['rel_l2_vs_exact_compensation_on']))}</td>"
                   f"<td>{e(_fmt(c['rel_l2_vs_exact_compensation_off']))}</td>"
                   f"<td>{e(_fmt(c['flex_rel_l2_vs_sol_nocomp']))}</td>"
                   f"<td>{e(_fmt(c['sparge_rel_l2_vs_sol_nocomp']))}</td>"
                   f"<td>{e(str(c['sparge_partial_blocks']))}</td></tr>" for c in r["compensation"])
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>all-real seed table</title>"
            "<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}</style></head><body>"
            f"<h1>All-real seed table</h1><p>{e(r['preset'])}, {e(r['device'])}, commit "
            f"{e(r['commit'])}, {e(r['date'])}; baseline {e(r['baseline'])}; one timing run "
            f"{e(r['timing_run'])} on {e(r['clock'])}</p><table><tr>{head}</tr>{body}</table>"
            f"<p>{e(DENSITY_NOTE)}</p>"
            "<h2>What compensation is worth</h2><table><tr><th>tau</th><th>density</th>"
            "<th>sol vs exact, compensation on</th><th>off</th><th>flex vs sol nocomp</th>"
            f"<th>sparge vs sol nocomp</th><th>sparge blocks computed whole</th></tr>{comp}</table>"
            f"<p><b>{e(r['answer'])}</b></p></body></html>\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for opt in ("--fixture", "--out", "--baseline", "--exact", "--routings", "--taus", "--steps",
                "--preset", "--device"):
        p.add_argument(opt, required=True)
    p.add_argument("--native", default="", help="routings on SpargeAttn's sm90 grid (SPARGE_NATIVE)")
    p.add_argument("--start-ns", type=int, required=True, help="the command's start (date +%%s%%N)")
    p.add_argument("--budget-s", type=float, default=120)
    a = p.parse_args()
    r = build(a)
    with open(os.path.join(a.out, "real_seed_table.json"), "w") as fh:
        json.dump(r, fh, indent=2)
    t = text(r)
    for ext, content in (("txt", t), ("md", markdown(r)), ("html", page(r))):
        with open(os.path.join(a.out, f"real_seed_table.{ext}"), "w") as fh:
            fh.write(content)
    print(t, end="")


if __name__ == "__main__":
    main()
