"""A stand-in for the `sageattention` package, for testing touchstone's plumbing only.

scripts/sage-fidelity and fixtures/capture/sage_kernels.py call SageAttention 2.2.0's
public functions and undo the layouts they return. This stand-in has the same functions
and the same documented layouts, with quantisers written from numerics.md, so a run
on the GPU machine (where the real package is not installed) shows that the layouts
are undone correctly: the codes then match touchstone's emulation almost everywhere.
Attention itself is plain SDPA. Nothing here says anything about the real kernels.
"""
import torch.nn.functional as F

__touchstone_stand_in__ = True


def _attention(q, k, v, tensor_layout="HND", is_causal=False, sm_scale=None, **_):
    assert tensor_layout == "HND" and not is_causal
    return F.scaled_dot_product_attention(q, k, v, scale=sm_scale)


sageattn = _attention
sageattn_qk_int8_pv_fp8_cuda = _attention
sageattn_qk_int8_pv_fp8_cuda_sm90 = _attention
