"""python3 -m touchstone scan --kernel KERNEL --from N --to M [touchstone scan options]

A Python kernel's error against shape (docs/scan.md): the search, the synthetic fixtures, the
exact reference and the report are touchstone's own (`touchstone scan`, C++); this module is
its worker. `scan` starts `touchstone scan --worker "python3 -m touchstone.scan --serve ..."`,
and the worker, one process for the whole scan (one import, one CUDA context), runs the kernel
on each fixture it is sent and stores its output there as /outputs/scan/attention.

Protocol (drivers/scan.hpp): a line "run PATH" on stdin -> the kernel on PATH's q, k, v, its
output stored; the answer one line on stdout, "ok" or "error MESSAGE"; "quit" or end of input
ends the worker. Anything the kernel prints goes to stderr, never into the answers."""
import argparse
import os
import shlex
import shutil
import subprocess
import sys

from .schema import CaptureError

PROG = "python3 -m touchstone scan"
HERE = os.path.dirname(os.path.abspath(__file__))
OUTPUT = "scan"  # kScanWorkerOutput


def find_touchstone(given=None):
    """The touchstone binary: --touchstone, $TOUCHSTONE_CLI, `touchstone` on PATH, or the
    checkout's build-gpu/ or build/ (in that order)."""
    root = os.path.dirname(os.path.dirname(HERE))
    for c in (given, os.environ.get("TOUCHSTONE_CLI"), shutil.which("touchstone"),
              os.path.join(root, "build-gpu", "touchstone"), os.path.join(root, "build", "touchstone")):
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
        if c and c == given:
            raise CaptureError(f"--touchstone {given}: not an executable file")
    raise CaptureError("no touchstone binary: give --touchstone PATH or set TOUCHSTONE_CLI")


def serve(kernel_spec, device="auto", layout=None):
    """The worker loop; returns the exit code."""
    from . import kernels, replay

    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # the kernel's prints (Python or C) go to stderr
    sys.stdout = sys.stderr
    try:
        kernel = kernels.resolve(kernel_spec, layout)
    except CaptureError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    for line in sys.stdin:
        cmd, _, path = line.rstrip("\n").partition(" ")
        if cmd == "quit":
            break
        if cmd != "run" or not path:
            answers.write(f"error unknown request {line.strip()[:80]!r} (expected run PATH or quit)\n")
            continue
        try:
            replay.replay(path, kernel, name=OUTPUT, device=device, reps=1, warmup=0, rotate=1)
            answers.write("ok\n")
        except Exception as e:  # noqa: BLE001 — this shape failed; the scan goes on
            msg = " ".join(f"{type(e).__name__}: {e}".split())
            answers.write(f"error {msg[:500]}\n")
    return 0


def _check_importable(kernel):
    """A kernel whose library is missing (sageattention, spas_sage_attn) is bad input, said once
    before any shape is synthesized, not a failure at every shape. Other errors of make() (one
    that needs a fixture, say) are left to the shapes, which report them."""
    import torch

    try:
        kernel.make(torch, {})
    except ImportError as e:
        raise CaptureError(f"kernel {kernel.spec!r}: {e}") from None
    except Exception:  # noqa: BLE001 — not this check's to judge
        pass


def _parser():
    p = argparse.ArgumentParser(
        prog=PROG, allow_abbrev=False, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="A Python kernel's error against exact over a range of shapes, bisecting to where "
                    "it leaves its trend\n(docs/scan.md): touchstone scan with this module as its worker.",
        epilog="Every other option is touchstone scan's (touchstone scan --help): --from, --to, "
               "--dim, --heads, --head-dim, --exact (exact_cuda on a GPU machine), --budget, "
               "--json, --html, ...\nExample: python3 -m touchstone scan --kernel sdpa_cudnn "
               "--from 1024 --to 200000 --heads 2 --exact exact_cuda --json scan.json")
    p.add_argument("--kernel", required=True, help="a replay built-in or module:function")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"),
                   help="where the kernel runs (default auto: cuda where a device is)")
    p.add_argument("--layout", default=None, choices=("BHSD", "BSHD"), help="a user kernel's layout")
    p.add_argument("--touchstone", help="the touchstone binary (default: $TOUCHSTONE_CLI, touchstone on "
                                        "PATH, the checkout's build-gpu/ or build/)")
    p.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    return p


def main(argv):
    a, rest = _parser().parse_known_args(argv)
    if a.serve:
        return serve(a.kernel, a.device, a.layout)
    try:
        from . import kernels

        k = kernels.resolve(a.kernel, a.layout)  # a bad name fails here, before touchstone starts
        exe = find_touchstone(a.touchstone)
        _check_importable(k)
    except (CaptureError, ImportError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    worker = [sys.executable, "-m", "touchstone.scan", "--serve", "--kernel", a.kernel, "--device", a.device]
    if a.layout:
        worker += ["--layout", a.layout]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(HERE)] + [x for x in env.get("PYTHONPATH", "").split(os.pathsep) if x])
    label = ["--label", f"python:{a.kernel}"] if "--label" not in rest else []
    return subprocess.run([exe, "scan", "--worker", shlex.join(worker), *label, *rest], env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
