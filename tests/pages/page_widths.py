#!/usr/bin/env python3
"""The triage and batch pages in an 800-pixel window: nothing is cut off.

usage: page_widths.py TOUCHSTONE OUT_DIR

Both pages hold things wider than a narrow window (triage's head x query block and frame x
tile maps, batch's summary table of every rule); those lie in boxes that scroll on their own
(div.wide), so the page itself must not be wider than the window: render_pages.py hides the
scroll bars, and a screenshot of a page wider than its window shows it cut at the edge. Each
page is made on a `ci` fixture, loaded in Debian's /usr/bin/chromium with a probe script
appended, and the probe's measurements read back from the DOM (--dump-dom):
  - the document is no wider than the window (scrollWidth <= clientWidth);
  - no element outside a scroll box ends past the window's right edge;
  - no element cuts what it holds (overflow hidden or clip with content wider than the box),
    and every box whose content is wider scrolls (overflow-x auto or scroll).
Screenshots at 800 pixels stay in OUT_DIR. Without chromium the test prints "skipped: no
chromium" and exits 0 (ctest reports it skipped)."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import page_probe

CHROMIUM = os.environ.get("TOUCHSTONE_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars"]
WIDTH = 800

# Runs in the page once it is laid out; writes its findings as JSON into <body data-widths>.
PROBE = r"""<script>
(function () {
  const doc = document.documentElement, limit = doc.clientWidth;
  const found = {window: limit, document: doc.scrollWidth, past_edge: [], cut: [], wide_boxes: 0};
  const name = e => e.tagName.toLowerCase() + (e.className && typeof e.className === "string" ?
      "." + e.className.trim().split(/\s+/).join(".") : "");
  for (const e of document.body.querySelectorAll("*")) {
    if (e.tagName === "SCRIPT") continue;
    const style = getComputedStyle(e);
    const scrolls = style.overflowX === "auto" || style.overflowX === "scroll";
    if (e.scrollWidth > e.clientWidth + 1 && e.clientWidth > 0) {
      if (scrolls) found.wide_boxes += 1;
      else if (style.overflowX === "hidden" || style.overflowX === "clip") found.cut.push(name(e));
    }
    // Inside a box that scrolls, content past the window is the box's to show.
    let inside = false;
    for (let p = e.parentElement; p && p !== document.body; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if (o === "auto" || o === "scroll") { inside = true; break; }
    }
    if (!inside && e.getBoundingClientRect().right > limit + 1) found.past_edge.push(name(e) + " ends at " +
        Math.round(e.getBoundingClientRect().right) + " px");
  }
  document.body.setAttribute("data-widths", JSON.stringify(found));
})();
</script></body>"""


def chromium(args, work):
    prof = tempfile.mkdtemp(dir=work)
    r = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={prof}", f"--window-size={WIDTH},1000", *args],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: chromium {' '.join(args[:1])}: exit {r.returncode}")
    return r.stdout


def measure(page, work):
    probed = page_probe.probed_copy(page, work, PROBE, ".probe.html")
    dom = chromium(["--dump-dom", "file://" + probed], work)
    m = re.search(r'data-widths="([^"]*)"', dom)
    if not m:
        raise SystemExit(f"FAIL: {page}: the probe left no measurement (did the page load?)")
    text = m.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return json.loads(text)


def main():
    if len(sys.argv) != 3:
        print(__doc__.split("\n")[2], file=sys.stderr)
        return 2
    exe, out = sys.argv[1], os.path.abspath(sys.argv[2])
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        print(f"skipped: no chromium at {CHROMIUM} (scripts/install-deps installs it)")
        return 0
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="ts-widths-")
    env = dict(os.environ, TOUCHSTONE_NO_PROGRESS="1")

    def cli(args, ok=(0,)):
        r = subprocess.run([exe, *args], capture_output=True, text=True, env=env)
        if r.returncode not in ok:
            raise SystemExit(f"FAIL: touchstone {' '.join(args)}: exit {r.returncode}\n{r.stderr[-2000:]}")

    fx = os.path.join(work, "ci.h5")
    cli(["fixture", "synth", "--preset", "ci", "--with-block", "-o", fx])
    for ref in (["--backend", "exact"], ["--backend", "sage2", "--preset", "sm121"],
                ["--backend", "sol", "--tau", "1.3"]):
        cli(["reference", fx, *ref])
    pages = {"triage": os.path.join(out, "triage_800.html"), "batch": os.path.join(out, "batch_800.html")}
    cli(["triage", fx, "--candidate", "stored:sol_tau1.3_bf16", "--html", pages["triage"]])
    plan = os.path.join(work, "plan.json")
    with open(plan, "w") as f:
        json.dump({"schema": "touchstone.plan/1", "fixtures": [fx], "gates": ["sage_compat", "sparse_acceptance"],
                   "candidates": ["stored:sol_tau1.3_bf16", "stored:exact", "sage2:preset=sm90"],
                   "options": {"pairs": 0}}, f)
    cli(["batch", plan, "--workers", "1", "--html", pages["batch"]], ok=(0, 1))

    # The probe itself: a page with a block wider than the window outside any scroll box, and a
    # box that hides what it holds, must both be found (a probe that finds nothing proves nothing).
    wide = os.path.join(work, "too_wide.html")
    with open(wide, "w") as f:
        f.write('<!DOCTYPE html><html><body><div style="width:1500px">x</div>'
                '<div style="width:200px;overflow:hidden"><div style="width:900px">y</div></div></body></html>')
    check = measure(wide, work)
    if not (check["document"] > check["window"] and check["past_edge"] and check["cut"]):
        raise SystemExit(f"FAIL: the probe missed a page made too wide: {check}")

    failed = False
    for name, page in pages.items():
        found = measure(page, work)
        png = os.path.join(out, f"{name}_800.png")
        chromium([f"--screenshot={png}", "file://" + page], work)
        problems = []
        if found["document"] > found["window"]:
            problems.append(f"the page is {found['document']} px wide in a {found['window']} px window")
        problems += [f"past the window's edge: {p}" for p in found["past_edge"][:10]]
        problems += [f"cuts its content: {c}" for c in found["cut"][:10]]
        print(f"{'ok  ' if not problems else 'FAIL'} {name} at {WIDTH} px: page {found['document']} px, "
              f"{found['wide_boxes']} box(es) scrolling their own content -> {png}")
        for p in problems:
            print(f"     {p}")
        failed |= bool(problems)
    shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
