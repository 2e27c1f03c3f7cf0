"""python3 -m touchstone {replay, from-npz, sage-fidelity, scan} ...: results on stdout, one-line
errors on stderr; exit 0 pass, 1 check failed, 2 bad input, 3 internal error."""
import argparse
import json
import os
import sys

from . import _deps, kernels, tables, terminal
from .schema import CaptureError, FixtureExists, NonFiniteInput

PROG = "python3 -m touchstone"


def _kernel_list(columns):
    width = max(map(len, kernels.BUILTIN))
    return "\n".join(terminal.fill(doc, columns, f"  {name:{width}}  ", " " * (width + 4))
                      for name, doc in kernels.BUILTIN.items())


def _formatter(columns):
    """argparse's help at the terminal's width (touchstone.terminal), not its own guess (80 in
    a pipe); description and epilog are fitted by the parser (paragraphs and example lines)."""
    return lambda prog: argparse.RawDescriptionHelpFormatter(prog, width=columns)


def _prose(columns, *paragraphs):
    """Paragraphs fitted to `columns`; a paragraph starting with two spaces is a command,
    kept as it is."""
    return "\n".join(p if p.startswith("  ") else terminal.fill(p, columns, "", "")
                     for p in paragraphs)


class _OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line on stderr and exit 2, as the C++ CLI gives them (the
    subcommands' parsers are of this class too: argparse makes them with the parent's)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _parser():
    columns = terminal.width()
    p = _OneLineParser(prog=PROG, description=__doc__.split("\n")[0],
                       formatter_class=_formatter(columns))
    sub = p.add_subparsers(dest="cmd", metavar="{replay,from-npz,sage-fidelity,scan}")
    sub.required = True

    r = sub.add_parser(
        "replay", formatter_class=_formatter(columns),
        help="run kernels on a fixture's q, k, v; store their outputs and timings",
        description=_prose(
            columns,
            "Runs kernels on the fixture's q, k, v and stores each one's output as "
            "/outputs/NAME/attention and its timing samples as /timings/NAME (attribute clock: "
            f"{tables.CLOCK_DEVICE} on a GPU, {tables.CLOCK_HOST} on the CPU), so that",
            "  touchstone gate --gate G --fixture F --baseline B --candidate stored:NAME",
            "judges it. Several --kernel are timed interleaved in ONE timing run (warm-up rounds, "
            "then --reps rounds K1 K2 ... Kn, inputs rotated): their /timings share the attribute "
            "timing_run and carry device and round_order, so the gate pairs them by round."),
        epilog=_prose(
            columns,
            "KERNEL is a built-in name or module:function (module importable, or a path to a .py "
            "file). A user kernel is f(q, k, v, softmax_scale) -> out: q, k, v torch tensors of "
            "one sequence (batch 1) in --layout (BHSD [1, H, S, D] or BSHD [1, S, H, D]), in the "
            "fixture's element type (bfloat16 for captured fixtures), on the replay device; "
            "non-causal attention over the whole sequence; out in the same layout and shape as q "
            "(stored in the fixture's element type).", "",
            "built-in kernels (layout BHSD):") + "\n" + _kernel_list(columns) + "\n\n"
        + _prose(columns,
                 "parameters (KERNEL as name:key=value,...; output name from them, e.g. "
                 "sparge_topk0.5, flex_<routing>, sparge_<routing>):")
        + "\n" + kernels.params_help(columns) + "\n\nexample:\n"
        "  touchstone reference f.h5 --backend sol --tau 1.3 compensation=off --store-routing\n"
        "  " + PROG + " replay f.h5 --kernel sdpa_cudnn \\\n"
        "      --kernel flex_sol:routing=sol_tau1.3_bf16_nocomp \\\n"
        "      --kernel sparge_sol:routing=sol_tau1.3_bf16_nocomp \\\n"
        "      --kernel sparge_topk:topk=0.5 --reps 10")
    r.add_argument("fixture")
    r.add_argument("--kernel", required=True, metavar="KERNEL", action="append",
                   help="repeatable: several are timed interleaved in one timing run")
    r.add_argument("--name", action="append",
                   help="output name (default: the kernel's); with several --kernel, one each")
    r.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"),
                   help="auto: cuda where a device is, else cpu")
    r.add_argument("--layout", default=None, choices=("BHSD", "BSHD"),
                   help="a user kernel's layout (default BHSD, or its touchstone_layout attribute)")
    t = tables.REPLAY_TIMING  # core/timing_defaults.hpp, the one table of timing defaults
    r.add_argument("--reps", type=int, default=t["reps"], help=f"timed calls (default {t['reps']})")
    r.add_argument("--warmup", type=int, default=t["warmup"],
                   help=f"untimed calls first (default {t['warmup']})")
    r.add_argument("--rotate", type=int, default=t["rotate"],
                   help=f"input copies cycled through while timing (default {t['rotate']})")
    r.add_argument("--skip-failing", action="store_true",
                   help="several kernels: leave out one that fails to build or in the first warm-up "
                        "round (listed in the result) instead of failing the run")
    r.add_argument("--dump", action="store_true",
                   help="sageattn_<preset> kernels: also store their quantised intermediates")
    r.add_argument("--compress", action="store_true", help="shuffle + deflate the added datasets")
    r.add_argument("--json", action="store_true")

    n = sub.add_parser(
        "from-npz", help="a fixture from an .npz holding q, k, v",
        formatter_class=_formatter(columns),
        description=_prose(
            columns,
            "Writes a fixture from an .npz with arrays q, k, v (and optionally observed, "
            "positions) in --layout, of a float element type (float16, bfloat16 as uint16 bits "
            "with --bf16-bits, float32, float64; integer arrays are refused, as fixture validate "
            "refuses them). The output is never the .npz or --config itself."),
        epilog="example:\n"
               "  " + PROG + " from-npz captured.npz -o block3.h5 --model wan2.1 \\\n"
               "      --layout BHSD --block-index 3 --step 10\n"
               "  touchstone fixture validate block3.h5")
    n.add_argument("npz", help="the .npz file: arrays q, k, v [, observed, positions]")
    n.add_argument("--config", help="JSON file with the /config attributes (default: an "
                                    "attention-only config from the shapes)")
    n.add_argument("-o", "--output", required=True, help="the fixture to write (HDF5)")
    n.add_argument("--model", required=True, help="the model the tensors come from (root attribute)")
    n.add_argument("--layout", default="SHD", choices=("SHD", "BSHD", "BHSD"),
                   help="of q, k, v and observed (default SHD: [S, H, D]; batched: sequence 0)")
    n.add_argument("--source", default="captured", choices=("captured", "synthetic"),
                   help="default captured")
    n.add_argument("--block-index", type=int, default=0, help="the block captured (default 0)")
    n.add_argument("--step", type=int, default=0, help="the denoising step captured (default 0)")
    n.add_argument("--seed", type=int, default=0, help="the generation's seed (default 0)")
    n.add_argument("--resolution", type=int, nargs=2, default=(0, 0), metavar=("W", "H"),
                   help="the video's width and height (default 0 0: not given)")
    n.add_argument("--frames", type=int, default=0, help="the video's frame count (default 0: not given)")
    n.add_argument("--bf16-bits", action="store_true", help="uint16 arrays hold bfloat16 bits")
    n.add_argument("--compress", action="store_true", help="shuffle + deflate the datasets")
    n.add_argument("--force", action="store_true",
                   help="replace an existing fixture (with every output it holds)")
    n.add_argument("--allow-nonfinite", action="store_true",
                   help="write q, k, v holding NaN or Inf (refused otherwise, as fixture validate "
                        "refuses them)")

    # Listed here for --help only: main() hands scan's arguments to scan.py untouched.
    sub.add_parser("scan", add_help=False,
                   help="a Python kernel's error against shape, by touchstone scan "
                        "(python3 -m touchstone scan --help)")

    s = sub.add_parser(
        "sage-fidelity", formatter_class=_formatter(columns),
        help="the sage2 emulation against the real SageAttention kernels",
        description=__import__("touchstone.fidelity", fromlist=["x"]).__doc__,
        epilog="exit: 0 every preset within the target; 1 one is OUTSIDE (an emulation "
               "failure);\n2 a real kernel is MISTRUSTED (and none OUTSIDE), no sageattention "
               "module, or bad input.")
    s.add_argument("touchstone", nargs="?", default="./build-gpu/touchstone",
                   help="the touchstone binary (default ./build-gpu/touchstone)")
    one_each = " ".join(tables.SAGE2_ONE_PER_FUNCTION)
    s.add_argument("--presets", default=one_each,
                   help=f'default "{one_each}": one preset per real SageAttention function')
    s.add_argument("--out", default="fidelity-out")
    s.add_argument("--target", type=float, default=2e-3)
    s.add_argument("--seed", type=int, default=7)
    s.add_argument("--fixture-preset", default="ci", help="synthetic fixture preset (default ci)")
    s.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    s.add_argument("--reps", type=int, default=5)
    s.add_argument("--mistrust-ratio", type=float, default=4.0)
    s.add_argument("--ceiling-tflops", type=float, default=tables.MISTRUST_CEILING_TFLOPS,
                   help="a real kernel faster than this dense-equivalent rate is MISTRUSTED "
                        f"(default {tables.MISTRUST_CEILING_TFLOPS:g}, the gate's own)")
    s.add_argument("--json", action="store_true")
    return p


def _replay(a):
    # bad names and parameters are reported before any device check
    ks = [kernels.resolve(spec, a.layout) for spec in a.kernel]
    if not os.path.isfile(a.fixture):
        raise CaptureError(f"{a.fixture}: no such fixture file")
    from . import replay

    one = len(ks) == 1
    r = replay.replay(a.fixture, ks[0] if one else ks,
                      name=(a.name[0] if one and a.name else a.name), device=a.device, reps=a.reps,
                      warmup=a.warmup, rotate=a.rotate, dump=a.dump, compress=a.compress,
                      skip_failing=a.skip_failing)
    print(replay.to_json(r) if a.json else replay.summary_line(r))
    return 0


def _from_npz(a):
    import numpy as np

    from .fixture_io import write_fixture
    from .layouts import to_shd
    from .schema import attention_config, full_config

    # Before anything is read: the fixture written over its own .npz or --config loses it.
    for flag, given in (("the .npz ", a.npz), ("--config ", a.config)):
        if given and os.path.exists(a.output) and os.path.exists(given) and os.path.samefile(a.output, given):
            raise CaptureError(f"-o {a.output} is also an input ({flag}{given}): refusing to overwrite "
                               "it; write the output elsewhere")
    try:
        data = np.load(a.npz, allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        raise CaptureError(f"{a.npz}: not a readable .npz file of arrays ({e})") from None
    if not hasattr(data, "files"):
        raise CaptureError(f"{a.npz}: a single .npy array, not an .npz file with q, k and v")
    for key in ("q", "k", "v"):
        if key not in data:
            raise CaptureError(f"{a.npz}: missing array '{key}'")
    known = ("q", "k", "v", "observed", "positions")
    unknown = [key for key in data.files if key not in known]
    if unknown:  # a misspelt "observed" would otherwise vanish without a word
        raise CaptureError(f"{a.npz}: unknown array '{unknown[0]}' (an .npz for from-npz holds "
                           f"{', '.join(known)})")
    if a.config:
        try:
            with open(a.config) as fh:
                config = json.load(fh)
        except OSError as e:
            raise CaptureError(f"--config {a.config}: {e.strerror}") from None
        except ValueError as e:
            raise CaptureError(f"--config {a.config}: not JSON ({e})") from None
        if not isinstance(config, dict):
            raise CaptureError(f"--config {a.config}: expected a JSON object of /config attributes")
    else:
        try:
            config = attention_config(*to_shd(data["q"], a.layout, 0, "q").shape)
        except CaptureError as e:
            raise CaptureError(f"{a.npz}: {e}") from None
    try:
        config = full_config(config)
    except CaptureError as e:
        raise CaptureError(f"--config {a.config}: {e}" if a.config else str(e)) from None
    try:
        write_fixture(a.output, data["q"], data["k"], data["v"], config, model=a.model,
                      source=a.source, block_index=a.block_index, step=a.step, seed=a.seed,
                      resolution=a.resolution, frames=a.frames, layout=a.layout,
                      observed=data["observed"] if "observed" in data else None,
                      positions=data["positions"] if "positions" in data else None,
                      compress=a.compress, bf16_bits=a.bf16_bits, replace=a.force,
                      allow_nonfinite=a.allow_nonfinite)
    except FixtureExists as e:
        raise FixtureExists(e.path, "--force") from None
    except NonFiniteInput as e:
        raise NonFiniteInput(e.path, e.where, e.count, e.first, "--allow-nonfinite") from None
    except CaptureError as e:
        # A shape or element type of one of the arrays: which file holds it.
        if str(e).startswith(("/attention/", "/block/")):
            raise CaptureError(f"{a.npz}: {e}") from None
        raise
    print(f"wrote {a.output}")
    return 0


def _fidelity(a):
    from . import fidelity

    report, code = fidelity.run(a.touchstone, a.out, presets=a.presets.split(), target=a.target,
                                seed=a.seed, fixture_preset=a.fixture_preset, device=a.device,
                                reps=a.reps, mistrust_ratio=a.mistrust_ratio,
                                ceiling_tflops=a.ceiling_tflops)
    print(json.dumps(report, indent=2) if a.json else fidelity.table(report))
    if code == 2:
        bad = [r["preset"] for r in report["presets"] if r["status"] == "MISTRUSTED"]
        print(f"{PROG} sage-fidelity: error: the real kernel of {', '.join(bad)} is MISTRUSTED "
              "(a broken reference): nothing to judge the emulation against", file=sys.stderr)
    return code


def _missing(e, cmd=None):
    """One line for a missing package (exit 2); other import errors as they are."""
    where = f"{PROG} {cmd}" if cmd else PROG
    what = _deps.message(_deps.missing(e), sys.executable) if _deps.missing(e) else str(e)
    print(f"{where}: error: {what}", file=sys.stderr)
    return 2


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["scan"]:  # its options are touchstone scan's: passed through (scan.py)
        from . import scan

        return scan.main(argv[1:])
    try:
        parser = _parser()  # sage-fidelity's help text comes from a module that needs h5py
    except ModuleNotFoundError as e:
        return _missing(e)
    a = parser.parse_args(argv)
    try:
        return {"replay": _replay, "from-npz": _from_npz, "sage-fidelity": _fidelity}[a.cmd](a)
    except ModuleNotFoundError as e:
        return _missing(e, a.cmd)
    except (CaptureError, ImportError, OSError, KeyError, json.JSONDecodeError) as e:
        print(f"{PROG} {a.cmd}: error: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 — one line, exit 3, never a traceback
        print(f"{PROG} {a.cmd}: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return 3


def entry():
    sys.exit(main())
