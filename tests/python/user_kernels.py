"""Kernels a user might replay (`--kernel user_kernels:attention_fp32`): f(q, k, v, scale)."""
import torch


def attention_fp32(q, k, v, scale):
    """Attention in float32, [1, H, S, D] in and out."""
    p = torch.softmax(torch.matmul(q.float(), k.float().transpose(-1, -2)) * scale, dim=-1)
    return torch.matmul(p, v.float()).to(q.dtype)


def attention_bshd(q, k, v, scale):
    """The same on [1, S, H, D]."""
    return attention_fp32(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                          scale).transpose(1, 2)


attention_bshd.touchstone_layout = "BSHD"


def garbage(q, k, v, scale):
    """Plausible-looking numbers that are not attention."""
    return torch.flip(v, dims=[2]) * 2


def raises(q, k, v, scale):
    raise RuntimeError("CUDA error: an illegal memory access was encountered")


def wrong_shape(q, k, v, scale):
    return q[:, :, :-1]


def writes_into_its_inputs(q, k, v, scale):
    """Attention that scribbles over q, k and v after using them (a kernel reusing its input
    buffers as scratch)."""
    out = attention_fp32(q, k, v, scale)
    for t in (q, k, v):
        t.mul_(0)
    return out
