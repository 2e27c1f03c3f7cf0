"""per_warp_int8 and per_channel_fp8 with SageAttention 2.2.0's documented output layouts."""
import torch

_V_PERMUTATION = [0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15]


def _pad_tokens(x, multiple):
    pad = (-x.size(2)) % multiple
    return torch.cat([x, x.new_zeros(x.size(0), x.size(1), pad, x.size(3))], dim=2) if pad else x


def _div(a, b):
    """a / b with IEEE division: torch turns `scalar / tensor` and `tensor / scalar`
    into reciprocal multiplications, which move scales and codes by an ulp."""
    a = a if isinstance(a, torch.Tensor) else torch.full_like(b, a)
    b = b if isinstance(b, torch.Tensor) else torch.full_like(a, b)
    return torch.div(a, b)


def _rni_groups(x, group):
    """[B, H, S, D] float32 -> codes, scales with one scale per `group` tokens (S padded)."""
    b, h, s, d = x.shape
    g = x.reshape(b, h, s // group, group * d)
    amax = g.abs().amax(dim=-1).clamp_min(1e-7)
    codes = torch.round(g * _div(127.0, amax).unsqueeze(-1)).clamp(-128, 127).to(torch.int8)
    return codes.reshape(b, h, s, d), _div(amax, 127.0)


def per_warp_int8(q, k, km=None, BLKQ=128, WARPQ=32, BLKK=64, tensor_layout="HND"):
    assert tensor_layout == "HND"
    sq, sk = q.size(2), k.size(2)
    q8, qs = _rni_groups(_pad_tokens(q.float(), BLKQ), WARPQ)
    kf = k.float() - km.float() if km is not None else k.float()
    k8, ks = _rni_groups(_pad_tokens(kf, BLKK), BLKK)
    return q8[:, :, :sq].contiguous(), qs, k8[:, :, :sk].contiguous(), ks


def _e4m3_codes(x):
    """float32 -> E4M3 (float8_e4m3fn) codes as uint8, round to nearest even; |x| <= 448 here.
    For torch without float8 types; the same codes as torch's cast."""
    a = x.abs().double()
    _, e = torch.frexp(a)
    quantum = torch.pow(2.0, (e - 1).clamp(min=-6).double() - 3)  # subnormals: 2^-9
    r = torch.round(a / quantum) * quantum  # exact: a power-of-two quantum; half to even
    _, e2 = torch.frexp(r)
    normal = r >= 2.0 ** -6
    exp2 = torch.pow(2.0, (e2 - 1).double())
    code = torch.where(normal, (e2 - 1 + 7).double() * 8 + (r / exp2 - 1) * 8, r / 2.0 ** -9)
    return (code.to(torch.int32) | (torch.signbit(x).to(torch.int32) << 7)).to(torch.uint8)


def per_channel_fp8(v, tensor_layout="HND", scale_max=448.0, smooth_v=True):
    assert tensor_layout == "HND" and not smooth_v
    kv_len = v.size(2)
    vf = v.float()
    amax = vf.abs().amax(dim=2)  # [B, H, D]
    scaled = vf * _div(scale_max, amax).unsqueeze(2)
    fp8 = getattr(torch, "float8_e4m3fn", None)
    codes = scaled.to(fp8).view(torch.uint8) if fp8 is not None else _e4m3_codes(scaled)
    t = _pad_tokens(codes, 64).transpose(2, 3)  # [B, H, D, S_pad]
    perm = torch.tensor(_V_PERMUTATION, device=v.device)
    idx = (torch.arange(t.size(-1), device=v.device) // 16) * 16 + perm.repeat(t.size(-1) // 16)
    assert kv_len <= t.size(-1)
    out = t[..., idx].contiguous()
    return (out.view(fp8) if fp8 is not None else out), _div(amax, scale_max), None
