"""Attention kernels replay runs: the built-in table and any user callable "module:function".
A built-in with parameters is named like the C++ backend specs, "name:key=value,..." (unknown
keys are errors listing the known ones); its parameters and the versions of what it calls are
stored in the output's params.

A kernel is f(q, k, v, softmax_scale) -> out. q, k, v are torch tensors of one sequence with a
batch of one, in the kernel's layout ("BHSD" [1, H, S, D] for every built-in; a user kernel's is
replay's --layout, default BHSD, or its attribute `touchstone_layout`), in the fixture's element
type (bfloat16 for captured fixtures) on the replay device; non-causal attention over the whole
packed sequence. out: the same layout and shape as q, any floating type (it is stored in the
fixture's type)."""
import importlib
import os
import sys

from . import sage, sparse_kernels
from .layouts import check_layout
from .schema import CaptureError

_SDPA = {"sdpa_flash": "FLASH_ATTENTION", "sdpa_cudnn": "CUDNN_ATTENTION",
         "sdpa_efficient": "EFFICIENT_ATTENTION", "sdpa_math": "MATH"}

# name: what it is (shown by `replay --help`).
BUILTIN = {
    "sdpa": "torch scaled_dot_product_attention, PyTorch's own backend choice (torch >= 2.1)",
    "sdpa_flash": "SDPA restricted to FlashAttention-2 (torch >= 2.3)",
    "sdpa_cudnn": "SDPA restricted to cuDNN attention (torch >= 2.3)",
    "sdpa_efficient": "SDPA restricted to memory-efficient attention (torch >= 2.3)",
    "sdpa_math": "SDPA restricted to its math (reference) path (torch >= 2.3)",
    "torch_exact_fp64": "exact attention in float64: chunked matmul + softmax (any torch)",
    "sageattn": "sageattention.sageattn, whatever it dispatches to on this GPU",
}
BUILTIN.update({name: f"SageAttention 2.2.0's kernel of sage2 preset {name.split('_', 1)[1]} "
                      f"({sage.PRESETS[name][1]}, {sage.PRESETS[name][3]}); --dump: codes, scales"
                for name in sage.PRESETS})
BUILTIN.update({
    "sparge_topk": "SpargeAttn spas_sage2_attn_meansim_topk_cuda, its own selection of the topk "
                   "fraction of blocks (INT8 QK, FP8 PV; CUDA)",
    "sparge_cdf": "SpargeAttn spas_sage2_attn_meansim_cuda, its own selection by cdfthreshd "
                  "(cdf), simthreshd1 (sim), pvthreshd (pv) (CUDA)",
    "sparge_sol": "SpargeAttn block_sparse_sage2_attn_cuda executing sol's stored routing: its "
                  "grid (Hopper 64x128, else 128x64, from token 0) computes a block holding any "
                  "routed pair whole (counts in params)",
    "flex_sol": "FlexAttention (torch >= 2.5, torch.compile'd once, bf16) with a BlockMask of "
                "exactly sol's attended pairs (compensation off); kv_block: its key block "
                "(default sol's block_k)",
})

# Parameters of the built-ins that take them: key -> (type, default or None = required, doc).
_ROUTING = (str, None, "an output stored by `touchstone reference F --backend sol ... "
                       "--store-routing` (its /outputs/NAME/routing)")
PARAMS = {
    "sparge_topk": {"topk": (float, 0.5, "fraction of key blocks kept per query block"),
                    "pv": (float, 50.0, "pvthreshd")},
    "sparge_cdf": {"cdf": (float, 0.98, "cdfthreshd"), "sim": (float, 0.6, "simthreshd1"),
                   "pv": (float, 50.0, "pvthreshd")},
    "sparge_sol": {"routing": _ROUTING, "pv": (float, 50.0, "pvthreshd")},
    "flex_sol": {"routing": _ROUTING, "kv_block": (int, 0, "BlockMask key block (0: sol's block_k)")},
}


def params_help(columns=None):
    """The parameter lines of `replay --help`, fitted to `columns` (default the terminal's)."""
    from . import terminal

    lines = []
    for name, keys in PARAMS.items():
        shown = ",".join(f"{k}={'NAME' if d is None else _num(d)}" for k, (_, d, _) in keys.items())
        lines.append(f"  {name}:{shown}")
        lines += [terminal.fill(f"{k}: {doc}", columns, " " * 6, " " * 10)
                  for k, (_, _, doc) in keys.items()]
    return "\n".join(lines)


def parse_params(spec):
    """("name", {key: value}) of "name:key=value,..."; defaults filled in. CaptureError for an
    unknown key (listing the known ones), a bad value or a missing required key."""
    name, _, text = spec.partition(":")
    known = PARAMS.get(name, {})
    given = {}
    for item in filter(None, text.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise CaptureError(f"kernel {spec!r}: {item!r} is not key=value")
        if key not in known:
            raise CaptureError(f"kernel {spec!r}: unknown key {key!r} (known: "
                               f"{', '.join(known) if known else 'none, it takes no parameters'})")
        if key in given:
            raise CaptureError(f"kernel {spec!r}: key {key!r} given twice")
        kind = known[key][0]
        try:
            given[key] = kind(value)
        except ValueError:
            raise CaptureError(f"kernel {spec!r}: {key}={value!r} is not {kind.__name__}")
    out = {}
    for key, (kind, default, _) in known.items():
        if key not in given and default is None:
            raise CaptureError(f"kernel {spec!r}: needs {key}=NAME, {known[key][2]}")
        out[key] = given.get(key, default)
    for key in ("topk", "cdf"):
        if key in out and not 0 < out[key] <= 1:
            raise CaptureError(f"kernel {spec!r}: {key}={out[key]} must be in (0, 1]")
    if out.get("kv_block", 0) < 0:
        raise CaptureError(f"kernel {spec!r}: kv_block must be >= 0")
    if "routing" in out and not out["routing"]:
        raise CaptureError(f"kernel {spec!r}: routing= needs an output name")
    return name, out


def _num(x):
    return f"{x:g}" if isinstance(x, (int, float)) else str(x)


def default_name(name, p):
    """The output name of a parameterised built-in: sparge_topk0.5, sparge_cdf0.98,
    flex_<routing>, sparge_<routing>; a non-default extra knob appends _key<value>."""
    keys = PARAMS[name]
    if name in ("flex_sol", "sparge_sol"):
        base = name.split("_")[0] + "_" + p["routing"]
        extra = [k for k in keys if k != "routing"]
    else:
        main = "topk" if name == "sparge_topk" else "cdf"
        base = f"{name}{_num(p[main])}"
        extra = [k for k in keys if k != main]
    for k in extra:
        if p[k] != keys[k][1]:
            base += f"_{k}{_num(p[k])}"
    return base


class Kernel:
    """name: the default output name; spec: as given; params: a built-in's parsed parameters.
    make(torch, ctx) -> f(q, k, v, scale); ctx: {"fixture": path, "device": "cpu"|"cuda"}."""

    def __init__(self, name, fn_factory, layout, doc, spec=None, params=None):
        self.name, self._factory, self.layout, self.doc = name, fn_factory, layout, doc
        self.spec, self.params = spec or name, params or {}
        self.is_sage_preset = name in sage.PRESETS

    def make(self, torch, ctx=None):
        return self._factory(torch, ctx or {})


def exact_fp64(q, k, v, scale, torch, budget=None):
    """Exact attention in float64 on [1, H, S, D], queries in chunks whose scores fit `budget`
    bytes (8 GiB on a GPU, 1 GiB on the host)."""
    budget = budget or (8 << 30 if q.is_cuda else 1 << 30)
    qd, kd, vd = (t.double() for t in (q, k, v))
    H, S = q.size(1), k.size(2)
    chunk = max(32, budget // (8 * H * S) // 32 * 32)
    out = torch.empty_like(qd)
    kt = kd.transpose(-1, -2)
    for c0 in range(0, q.size(2), chunk):
        p = torch.softmax(torch.matmul(qd[:, :, c0:c0 + chunk], kt) * scale, dim=-1)
        out[:, :, c0:c0 + chunk] = torch.matmul(p, vd)
    return out


def _sdpa(name, torch):
    F = torch.nn.functional
    if not hasattr(F, "scaled_dot_product_attention") or tuple(
            int(x) for x in torch.__version__.split(".")[:2]) < (2, 1):  # scale= came in 2.1
        raise CaptureError(f"kernel {name}: needs torch >= 2.1 (this is {torch.__version__})")
    if name == "sdpa":
        return lambda q, k, v, s: F.scaled_dot_product_attention(q, k, v, scale=s)
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        raise CaptureError(f"kernel {name}: needs torch.nn.attention.sdpa_kernel (torch >= 2.3; "
                           f"this is {torch.__version__})")
    if not hasattr(SDPBackend, _SDPA[name]):
        raise CaptureError(f"kernel {name}: this torch ({torch.__version__}) has no "
                           f"SDPBackend.{_SDPA[name]}")
    backend = getattr(SDPBackend, _SDPA[name])

    def run(q, k, v, s):
        with sdpa_kernel([backend]):
            return F.scaled_dot_product_attention(q, k, v, scale=s)

    return run


def _sageattn(torch):
    from sageattention import sageattn  # ImportError where it is not installed: reported

    return lambda q, k, v, s: sageattn(q, k, v, tensor_layout="HND", is_causal=False, sm_scale=s)


def _builtin(name, p):
    if name in _SDPA or name == "sdpa":
        return lambda torch, ctx: _sdpa(name, torch)
    if name == "torch_exact_fp64":
        return lambda torch, ctx: (lambda q, k, v, s: exact_fp64(q, k, v, s, torch))
    if name == "sageattn":
        return lambda torch, ctx: _sageattn(torch)
    if name in ("sparge_topk", "sparge_cdf"):
        return lambda torch, ctx: sparse_kernels.sparge_own(name[7:], p, torch, ctx)
    if name == "sparge_sol":
        return lambda torch, ctx: sparse_kernels.sparge_sol(p, torch, ctx)
    if name == "flex_sol":
        return lambda torch, ctx: sparse_kernels.flex_sol(p, torch, ctx)
    return lambda torch, ctx: sage.kernel(name)


def resolve(spec, layout=None):
    """A Kernel for a built-in name (with its ":key=value,..." parameters) or "module:function"
    (module importable from sys.path or a path to a .py file). Bad names and parameters are
    CaptureErrors; nothing touches a device or a file here."""
    head = spec.partition(":")[0]
    if head in BUILTIN:
        name, p = parse_params(spec)
        shown = default_name(name, p) if name in PARAMS else name
        return Kernel(shown, _builtin(name, p), "BHSD", BUILTIN[name], spec=spec, params=p)
    if ":" not in spec:
        raise CaptureError(f"unknown kernel {spec!r}: expected one of {', '.join(BUILTIN)} or "
                           "module:function")
    mod_name, _, fn_name = spec.rpartition(":")
    try:
        if mod_name.endswith(".py"):
            folder, base = os.path.split(os.path.abspath(mod_name))
            sys.path.insert(0, folder)
            mod_name = base[:-3]
        module = importlib.import_module(mod_name)
    except ImportError as e:
        raise CaptureError(f"kernel {spec!r}: cannot import module {mod_name!r} ({e})")
    fn = getattr(module, fn_name, None)
    if not callable(fn):
        raise CaptureError(f"kernel {spec!r}: module {mod_name!r} has no callable {fn_name!r}")
    lay = check_layout(getattr(fn, "touchstone_layout", layout or "BHSD"))
    if lay == "SHD":
        raise CaptureError(f"kernel {spec!r}: layout must be BHSD or BSHD")
    return Kernel(fn_name, lambda torch, ctx: fn, lay, fn.__doc__ or "", spec=spec)
