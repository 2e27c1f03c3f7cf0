"""Attention kernels replay runs: the built-in table and any user callable "module:function".

A kernel is f(q, k, v, softmax_scale) -> out. q, k, v are torch tensors of one sequence with a
batch of one, in the kernel's layout ("BHSD" [1, H, S, D] for every built-in; a user kernel's is
replay's --layout, default BHSD, or its attribute `touchstone_layout`), in the fixture's element
type (bfloat16 for captured fixtures) on the replay device; non-causal attention over the whole
packed sequence. out: the same layout and shape as q, any floating type (it is stored in the
fixture's type)."""
import importlib
import os
import sys

from . import sage
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


class Kernel:
    def __init__(self, name, fn_factory, layout, doc):
        self.name, self._factory, self.layout, self.doc = name, fn_factory, layout, doc
        self.is_sage_preset = name in sage.PRESETS

    def make(self, torch):
        return self._factory(torch)


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


def _builtin(name):
    if name in _SDPA or name == "sdpa":
        return lambda torch: _sdpa(name, torch)
    if name == "torch_exact_fp64":
        return lambda torch: (lambda q, k, v, s: exact_fp64(q, k, v, s, torch))
    if name == "sageattn":
        return _sageattn
    return lambda torch: sage.kernel(name)


def resolve(spec, layout=None):
    """A Kernel for a built-in name or "module:function" (module importable from sys.path or
    a path to a .py file). Bad names are CaptureErrors; nothing touches a device here."""
    if spec in BUILTIN:
        return Kernel(spec, _builtin(spec), "BHSD", BUILTIN[spec])
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
    return Kernel(fn_name, lambda torch: fn, lay, fn.__doc__ or "")
