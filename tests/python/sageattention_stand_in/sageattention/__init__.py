"""A stand-in for the `sageattention` package, for testing touchstone's plumbing only.

touchstone's replay (kernels sageattn_<preset>, --dump) and sage-fidelity call SageAttention
2.2.0's public functions and undo the layouts they return. This stand-in has the same functions
and the same documented layouts, with quantisers written from numerics.md, so a run shows that
the layouts are undone correctly: the codes then match touchstone's emulation almost everywhere.
Attention itself is plain exact-ish attention (SDPA where torch has it). It runs on torch 1.13
on the CPU too (no float8 type there: V codes are made by hand and handed over as uint8).

TOUCHSTONE_STAND_IN_MODE (read at each call) makes it a broken reference on purpose, for every
attention function ("garbage") or for some ("sageattn_qk_int8_pv_fp8_cuda_sm90=nan,..."):
  garbage  attention returns seeded random values (finite, far from exact);
  nan      attention returns NaN.
Nothing here says anything about the real kernels.
"""
import os

import torch
import torch.nn.functional as F

__touchstone_stand_in__ = True


def _exact_enough(q, k, v, sm_scale):
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, scale=sm_scale)
    s = torch.matmul(q.float(), k.float().transpose(-1, -2)) * sm_scale
    return torch.matmul(torch.softmax(s, dim=-1), v.float()).to(q.dtype)


def _mode(name):
    modes = os.environ.get("TOUCHSTONE_STAND_IN_MODE", "")
    if "=" not in modes:
        return modes
    return dict(m.split("=", 1) for m in modes.split(",") if m).get(name, "")


def _attention(name, q, k, v, tensor_layout="HND", is_causal=False, sm_scale=None, **_):
    assert tensor_layout == "HND" and not is_causal
    mode = _mode(name)
    if mode == "garbage":
        g = torch.Generator().manual_seed(1)
        return (torch.randn(q.shape, generator=g) * 3).to(device=q.device, dtype=q.dtype)
    if mode == "nan":
        return torch.full_like(q, float("nan"))
    return _exact_enough(q, k, v, sm_scale if sm_scale is not None else q.size(-1) ** -0.5)


def sageattn(*args, **kwargs):
    return _attention("sageattn", *args, **kwargs)


def sageattn_qk_int8_pv_fp8_cuda(*args, **kwargs):
    return _attention("sageattn_qk_int8_pv_fp8_cuda", *args, **kwargs)


def sageattn_qk_int8_pv_fp8_cuda_sm90(*args, **kwargs):
    return _attention("sageattn_qk_int8_pv_fp8_cuda_sm90", *args, **kwargs)
