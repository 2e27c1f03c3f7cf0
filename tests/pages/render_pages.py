#!/usr/bin/env python3
"""Every HTML page touchstone writes, rendered in headless Chromium: the plots are drawn.

usage: render_pages.py TOUCHSTONE PLUGIN_DIR OUT_DIR [PAGE ...]

For each page of PAGES (all, or those named): make it on a `ci` fixture with the built CLI,
load it in Debian's /usr/bin/chromium (no network, no GPU, a fresh profile), and check
  - the DOM Chromium parsed (--dump-dom): the expected number of <svg> plots, and per plot
    the expected number of points (markers, rows, cells), so a plot that lost its data or an
    SVG the browser dropped fails;
  - the screenshot: not blank (enough non-white pixels) and the plots' colours present (the
    markers were painted, not only the text).
  - for the chain and policy pages (`"labels": True`), the laid-out text of every plot, measured
    in the page by a probe script: no label past its plot's edge (cut) and no two labels on
    one another.
Screenshots and pages stay in OUT_DIR (printed) as the test's artefacts. Without chromium the
test prints "skipped: no chromium" and exits 0 (ctest reports it skipped); CI installs it
(scripts/install-deps). The PNG is read by PIL (python3-pil) where it is installed, else by the
standard-library decoder here (zlib; slower)."""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

import page_probe

CHROMIUM = os.environ.get("TOUCHSTONE_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars"]

# The pages: how each is made (argument lists for the CLI; {fx} the fixture, {out} the page,
# {plugins} the plugin folder, {work} a scratch folder) and what its DOM must hold. `svgs`: the number of <svg>;
# `plots`: for each plot class (svg.plot.KIND), the count of plots and a per-plot element
# count (a regex counted inside each such <svg>). A new page (triage, history) is one more
# entry here.
PAGES = {
    "gate": {
        "make": [["gate", "--gate", "sage_compat", "--fixture", "{fx}", "--baseline", "stored:sage2_sm121",
                  "--candidate", "stored:sol_tau1.3_bf16", "--candidate", "stored:exact",
                  "--candidate", "stored:sage2_sm121", "--html", "{out}"]],
        "exit": (0, 1),
        "svgs": 8,  # one per rule of sage_compat
        "plots": {"dots": (8, r'<g class="row">', 3)},
        "colours": ["#1a7f37", "#cf222e"],  # pass and fail markers
    },
    "compare": {
        "make": [["compare", "{fx}", "sol_tau1.3_bf16", "exact", "--noise-floor", "sage2_sm121", "--html", "{out}"]],
        "exit": (0,),
        "svgs": 4,
        # ci: 4 heads, 7 query blocks, 4 frames, 4 heads' gains: one point each, and a
        # noise-floor tick per group.
        "plots": {"groups": (4, r'<circle class="dot group', [4, 7, 4, 4])},
        "colours": ["#0969da"],
    },
    "sweep": {
        "make": [["sweep", "{fx}", "--tau", "0.5,1.3,3", "--gate", "sparse_acceptance", "--html", "{out}"]],
        "exit": (0, 1),
        "svgs": 4,  # the Pareto plots (density, wall ms) and one per rule
        "plots": {"xy": (2, r'<circle class="dot (pass|fail|open)', 3), "dots": (2, r'<g class="row">', 3)},
        "colours": ["#cf222e"],
    },
    "chain": {
        # 4 x 4: a line per step, each step in a colour of its own (step 3's included).
        "make": [["fixture", "synth", "--preset", "tiny", "--seed", "1", "--blocks", "4", "--steps", "4",
                  "-o", "{work}/chain_set"],
                 ["chain", "{work}/chain_set", "--candidate", "sol:tau=1.3,precision=int8_qk",
                  "--candidate", "dense if step<2; sol:tau=1.3,precision=int8_qk", "--html", "{out}"]],
        "exit": (0, 1),
        "svgs": 4,  # per schedule: error against block (a line per step) and the own-error heatmap
        "plots": {"xy": (2, r'<circle class="dot [^"]*"[^>]*r="4\.0"', 16), "heatmap": (2, r'<rect class="cell', 16)},
        "colours": ["#0969da", "#8250df", "#bc4c00", "#bf3989"],
        "labels": True,
    },
    "policy": {
        # 13 schedules; at tiny every routed block is dense, so they share work 1 and end at four
        # points: coincident labels, and the all-dense one at the right edge.
        "make": [["fixture", "synth", "--preset", "tiny", "--seed", "1", "--blocks", "4", "--steps", "4",
                  "-o", "{work}/policy_set"],
                 ["policy", "{work}/policy_set", "--tau", "1,1.3,2", "--accuracy-only", "--html", "{out}"]],
        "exit": (0,),
        "svgs": 3,  # final error against work; the chosen schedule's error against block and heatmap
        "plots": {"xy": (2, r'<circle class="dot [^"]*"[^>]*r="4\.0"', [13, 16]), "heatmap": (1, r'<rect class="cell', 16)},
        "colours": ["#1a7f37"],
        "labels": True,
    },
    "scan": {
        "make": [["scan", "--candidate", "plugin:{plugins}/libtsk_cliff.so,cliff=300", "--from", "64",
                  "--to", "512", "--heads", "1", "--head-dim", "16", "--html", "{out}"]],
        "exit": (1,),
        "svgs": 1,
        "plots": {"xy": (1, r'<circle class="dot s[01]', None)},
        "colours": ["#0969da"],
    },
}


def png_pixels(path):
    """(width, height, rows of bytes, bytes per pixel) of an 8-bit RGB/RGBA PNG."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0, f"{path}: PNG kind {depth}/{colour}"
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, rows, bpp


def colour_counts(path):
    """{(r, g, b): pixels}, PIL's histogram in C where it is installed."""
    try:
        from PIL import Image
    except ImportError:
        w, h, rows, bpp = png_pixels(path)
        counts = {}
        for row in rows:
            for x in range(0, w * bpp, bpp):
                px = (row[x], row[x + 1], row[x + 2])
                counts[px] = counts.get(px, 0) + 1
        return counts
    im = Image.open(path).convert("RGB")
    return {c: n for n, c in im.getcolors(maxcolors=1 << 24)}


def screenshot_checks(path, colours):
    counts = colour_counts(path)
    total = sum(counts.values())
    share = 1 - counts.get((255, 255, 255), 0) / total
    want = {tuple(int(c[i:i + 2], 16) for i in (1, 3, 5)): c for c in colours}
    seen = {name for px in counts for target, name in want.items()
            if all(abs(px[i] - target[i]) <= 6 for i in range(3))}
    problems = []
    if share < 0.02:
        problems.append(f"nearly blank ({share:.1%} of pixels inked)")
    missing = [c for c in colours if c not in seen]
    if missing:
        problems.append(f"no pixel of the plot colour(s) {', '.join(missing)}: markers not painted")
    return problems, share


def dom_checks(dom, spec):
    problems = []
    svgs = re.findall(r"<svg\b.*?</svg>", dom, flags=re.S)
    if len(svgs) != spec["svgs"]:
        problems.append(f"{len(svgs)} <svg> in the DOM, expected {spec['svgs']}")
    for kind, (count, element, per_plot) in spec["plots"].items():
        plots = [s for s in svgs if re.search(r'class="plot ' + kind + r'"', s)]
        if len(plots) != count:
            problems.append(f"{len(plots)} {kind} plots, expected {count}")
            continue
        for i, s in enumerate(plots):
            n = len(re.findall(element, s))
            want = per_plot[i] if isinstance(per_plot, list) else per_plot
            if (want is None and n == 0) or (want is not None and n != want):
                problems.append(f"{kind} plot {i}: {n} x {element}, expected {want if want is not None else '> 0'}")
    return problems


# Runs in the page once it is laid out; writes into <body data-labels> every plot text that
# ends past its plot's box, and every pair of texts of one plot that lie on one another.
LABEL_PROBE = r"""<script>
(function () {
  const found = {plots: 0, texts: 0, cut: [], overlap: []};
  document.querySelectorAll("svg.plot").forEach((svg, k) => {
    found.plots += 1;
    const box = svg.getBoundingClientRect();
    const texts = Array.from(svg.querySelectorAll("text")).filter(t => t.textContent.trim() !== "");
    const rects = texts.map(t => t.getBoundingClientRect());
    found.texts += texts.length;
    rects.forEach((r, i) => {
      if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1)
        found.cut.push("plot " + k + ": '" + texts[i].textContent + "'");
      for (let j = 0; j < i; ++j) {
        const q = rects[j];
        if (r.left < q.right - 1 && q.left < r.right - 1 && r.top < q.bottom - 1 && q.top < r.bottom - 1)
          found.overlap.push("plot " + k + ": '" + texts[j].textContent + "' and '" + texts[i].textContent + "'");
      }
    });
  });
  document.body.setAttribute("data-labels", JSON.stringify(found));
})();
</script></body>"""


def probed_copy(page, work):
    return page_probe.probed_copy(page, work, LABEL_PROBE, ".labels.html")


def label_checks(dom):
    m = re.search(r'data-labels="([^"]*)"', dom)
    if not m:
        return ["the label probe left no measurement (did the page load?)"]
    text = m.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    found = json.loads(text)
    if found["texts"] == 0:
        return ["the label probe measured no text"]
    return ([f"cut at its plot's edge: {c}" for c in found["cut"][:10]] +
            [f"labels on one another: {o}" for o in found["overlap"][:10]])


def main():
    if len(sys.argv) < 4:
        print(__doc__.split("\n")[2], file=sys.stderr)
        return 2
    exe, plugins, out = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    names = sys.argv[4:] or list(PAGES)
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        print(f"skipped: no chromium at {CHROMIUM} (scripts/install-deps installs it)")
        return 0
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="ts-pages-")
    fx = os.path.join(work, "ci.h5")
    t0 = time.monotonic()
    env = dict(os.environ, TOUCHSTONE_NO_PROGRESS="1")

    def cli(args, ok=(0,)):
        r = subprocess.run([exe, *args], capture_output=True, text=True, env=env)
        if r.returncode not in ok:
            raise SystemExit(f"FAIL: touchstone {' '.join(args)}: exit {r.returncode}\n{r.stderr[-2000:]}")

    cli(["fixture", "synth", "--preset", "ci", "-o", fx])
    for ref in (["--backend", "exact"], ["--backend", "sage2", "--preset", "sm121"], ["--backend", "sol", "--tau", "1.3"]):
        cli(["reference", fx, *ref])
    for name in names:
        spec = PAGES[name]
        page = os.path.join(out, name + ".html")
        for args in spec["make"]:
            cli([a.format(fx=fx, out=page, plugins=plugins, work=work) for a in args], ok=spec["exit"])

    t_make = time.monotonic() - t0
    # Chromium two at a time (the CI machine has two cores): a screenshot and the DOM per page.
    jobs = []
    for name in names:
        page = "file://" + os.path.join(out, name + ".html")
        for what in ("png", "dom", "labels") if PAGES[name].get("labels") else ("png", "dom"):
            prof = tempfile.mkdtemp(dir=work)
            args = [CHROMIUM, *FLAGS, f"--user-data-dir={prof}"]
            if what == "png":
                args += ["--window-size=1100,2400", f"--screenshot={os.path.join(out, name + '.png')}", page]
            elif what == "dom":
                args += ["--dump-dom", page]
            else:
                args += ["--window-size=1100,2400", "--dump-dom",
                         "file://" + probed_copy(os.path.join(out, name + ".html"), work)]
            jobs.append((name, what, args))
    results, running = {}, []
    while jobs or running:
        while jobs and len(running) < 2:
            name, what, args = jobs.pop(0)
            running.append((name, what, subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)))
        name, what, p = running.pop(0)
        results[(name, what)] = p.communicate(timeout=60)[0]
        if p.returncode != 0:
            raise SystemExit(f"FAIL: chromium ({what}) on {name}.html: exit {p.returncode}")

    t_browser = time.monotonic() - t0 - t_make
    failed = False
    for name in names:
        spec = PAGES[name]
        png = os.path.join(out, name + ".png")
        problems = dom_checks(results[(name, "dom")], spec)
        if spec.get("labels"):
            problems += label_checks(results[(name, "labels")])
        shot, share = screenshot_checks(png, spec["colours"]) if os.path.isfile(png) else (["no screenshot"], 0)
        problems += shot
        print(f"{'ok  ' if not problems else 'FAIL'} {name}: {spec['svgs']} plots, {share:.1%} inked -> {png}")
        for pr in problems:
            print(f"     {pr}")
        failed |= bool(problems)
    shutil.rmtree(work, ignore_errors=True)
    print(f"screenshots in {out} ({time.monotonic() - t0:.1f} s: pages {t_make:.1f} s, chromium {t_browser:.1f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
