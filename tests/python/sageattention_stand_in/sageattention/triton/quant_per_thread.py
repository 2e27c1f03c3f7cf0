"""per_thread_int8 with the Triton kernel's recipe and token groups (numerics.md)."""
import torch

from ..quant import _div, _pad_tokens


def _trunc_groups(x, warp, groups, member_of):
    """x [B, H, S_pad, D] float32; `member_of(offset)` is the group of token `offset`
    inside its warp. Scales in warp-major, group-minor order."""
    b, h, s, d = x.shape
    gid = torch.tensor([member_of(i) for i in range(warp)], device=x.device)
    w = x.reshape(b, h, s // warp, warp, d)
    amax = torch.stack([w[:, :, :, gid == t].abs().amax(dim=(-1, -2)) for t in range(groups)], dim=-1)
    scale = _div(amax, 127.0) + 1e-7  # [B, H, warps, groups]
    per_token = scale[:, :, :, gid].unsqueeze(-1)  # [B, H, warps, warp, 1]
    y = torch.div(w, per_token.expand_as(w))
    y = y + 0.5 * torch.where(y >= 0, 1.0, -1.0)
    codes = torch.trunc(y).clamp(-128, 127).to(torch.int8)
    return codes.reshape(b, h, s, d), scale.reshape(b, h, -1)


def per_thread_int8(q, k, km=None, BLKQ=128, WARPQ=32, BLKK=64, WARPK=64, tensor_layout="HND"):
    assert tensor_layout == "HND"
    sq, sk = q.size(2), k.size(2)
    q8, qs = _trunc_groups(_pad_tokens(q.float(), BLKQ), WARPQ, 8, lambda i: i % 8)
    ks_in = (k - km) if km is not None else k  # formed in the input dtype, as the Triton kernel does
    k8, ks = _trunc_groups(_pad_tokens(ks_in.float(), BLKK), WARPK, 4, lambda i: (i % 8) // 2)
    return q8[:, :, :sq].contiguous(), qs, k8[:, :, :sk].contiguous(), ks
