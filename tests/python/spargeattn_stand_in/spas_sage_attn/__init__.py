"""A stand-in for SpargeAttn's `spas_sage_attn` package, for testing touchstone's plumbing only.

touchstone's replay (kernels sparge_topk, sparge_cdf, sparge_sol) calls three of SpargeAttn's
public functions with the arguments upstream documents (core.py at bfd980b). This stand-in has
the same signatures and the same mask layout: mask_id [B, H, ceil(S/BQ), ceil(S/BK)], blocks
from token 0, BQ x BK = 128 x 64, or 64 x 128 as on the sm90 path (upstream's sm90 kernel's CTA)
when TOUCHSTONE_STAND_IN_ARCH=sm90; a mask of any other shape is refused, as a wrong geometry
would be wrong on the real kernel. Attention is exact (float64) over the computed blocks'
(query, key) pairs, so a test sees exactly which pairs a mask computes. Its own block selection
(topk, cdf) is a plain mean-pooled score ranking, NOT SpargeAttn's; nothing here says anything
about the real kernels' accuracy or speed. Runs on the CPU with torch 1.13.
"""
import math
import os

import torch

__touchstone_stand_in__ = True
__version__ = "stand-in"


def block_geometry():
    """(queries, keys) of one mask block."""
    return (64, 128) if os.environ.get("TOUCHSTONE_STAND_IN_ARCH") == "sm90" else (128, 64)


def _out_dtype(q):
    return torch.float16 if q.dtype in (torch.float16, torch.float32) else torch.bfloat16


def _masked(q, k, v, block_map, scale):
    """Exact attention over the pairs of the computed blocks; rows with none give 0."""
    gq, gk = block_geometry()
    S = q.size(2)
    rows = torch.arange(S) // gq
    cols = torch.arange(k.size(2)) // gk
    pairs = block_map.bool()[:, :, rows][:, :, :, cols]  # [B, H, S, S]
    s = torch.matmul(q.double(), k.double().transpose(-1, -2)) * scale
    s = s.masked_fill(~pairs, -math.inf)
    p = torch.softmax(s, dim=-1).nan_to_num(0.0)
    return torch.matmul(p, v.double()).to(_out_dtype(q))


def _check(q, k, v, tensor_layout, is_causal=False):
    assert tensor_layout == "HND", "the stand-in takes HND only"
    assert not is_causal
    assert q.size(-2) >= 128, "seq_len should be not less than 128."
    assert q.size(-1) in (64, 128), "headdim should be in [64, 128]."


def _pooled(q, k, scale):
    gq, gk = block_geometry()
    B, H, S, D = q.shape
    def pool(x, g):
        n = -(-x.size(2) // g)
        pad = n * g - x.size(2)
        xp = torch.cat([x.double(), x.new_zeros(B, H, pad, D, dtype=torch.float64)], 2)
        counts = torch.full((n,), float(g), dtype=torch.float64)
        counts[-1] = g - pad
        return xp.view(B, H, n, g, D).sum(3) / counts[:, None]
    return torch.matmul(pool(q, gq), pool(k, gk).transpose(-1, -2)) * scale


def _sparsity(block_map):
    return 1.0 - block_map.float().mean().item()


def spas_sage2_attn_meansim_topk_cuda(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False,
                                      scale=None, smooth_k=True, simthreshd1=-0.1, cdfthreshd=None,
                                      topk=0.5, pvthreshd=50, attention_sink=False,
                                      tensor_layout="HND", output_dtype=torch.float16,
                                      return_sparsity=False):
    _check(q, k, v, tensor_layout, is_causal)
    scale = scale if scale is not None else q.size(-1) ** -0.5
    score = _pooled(q, k, scale)
    n = max(1, int(math.ceil(topk * score.size(-1))))
    keep = torch.zeros_like(score, dtype=torch.bool)
    keep.scatter_(-1, score.topk(n, dim=-1).indices, True)
    o = _masked(q, k, v, keep, scale)
    return (o, _sparsity(keep)) if return_sparsity else o


def spas_sage2_attn_meansim_cuda(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None, smooth_k=True, simthreshd1=0.6, cdfthreshd=0.98,
                                 pvthreshd=50, attention_sink=False, tensor_layout="HND",
                                 output_dtype=torch.float16, return_sparsity=False):
    _check(q, k, v, tensor_layout, is_causal)
    scale = scale if scale is not None else q.size(-1) ** -0.5
    p = torch.softmax(_pooled(q, k, scale), dim=-1)
    sp, idx = p.sort(dim=-1, descending=True)
    before = sp.cumsum(-1) - sp  # mass of the blocks ranked above
    keep = torch.zeros_like(p, dtype=torch.bool).scatter_(-1, idx, before < cdfthreshd)
    o = _masked(q, k, v, keep, scale)
    return (o, _sparsity(keep)) if return_sparsity else o


def block_sparse_sage2_attn_cuda(q, k, v, mask_id=None, dropout_p=0.0, scale=None, smooth_k=True,
                                 pvthreshd=50, attention_sink=False, tensor_layout="HND",
                                 output_dtype=torch.float16, return_sparsity=False):
    _check(q, k, v, tensor_layout)
    gq, gk = block_geometry()
    B, H, S, _ = q.shape
    want = (B, H, -(-S // gq), -(-k.size(2) // gk))
    assert mask_id is not None and mask_id.dim() == 4 and mask_id.is_contiguous(), "mask_id 4-D"
    assert tuple(mask_id.shape) == want, f"mask_id {tuple(mask_id.shape)}, expected {want}"
    scale = scale if scale is not None else q.size(-1) ** -0.5
    o = _masked(q, k, v, mask_id, scale)
    return (o, _sparsity(mask_id)) if return_sparsity else o
