"""The transformer block of block.md in PyTorch, float32, written from the spec (not from
touchstone's C++): the model whose stages test_block.py captures and touchstone replays.

Module names are deliberately not the stage names (as in a real model), so the capture needs
STAGE_OF, the mapping from module names to block.md's stages."""
import math

import torch
from torch import nn

# module name -> stage; the attention core takes and returns [B, H, S, D].
STAGE_OF = {"norm1": "norm1", "mod1": "modulate1", "attn.to_qkv": "qkv",
            "attn.q_norm_rope": "q_rope", "attn.k_norm_rope": "k_rope", "attn.core": "attention",
            "attn.to_out": "out_proj", "res1": "residual1", "norm2": "norm2", "mod2": "modulate2",
            "mlp.fc1": "fc1", "mlp.act": "swiglu", "mlp.fc2": "fc2", "res2": "output"}
LAYOUTS = {"q_rope": "BHSD", "k_rope": "BHSD", "attention": "BHSD"}
# block.md weight name -> parameter name
WEIGHTS = {"norm1_w": "norm1.weight", "norm2_w": "norm2.weight", "w_qkv": "attn.to_qkv.weight",
           "q_norm": "attn.q_norm_rope.weight", "k_norm": "attn.k_norm_rope.weight",
           "w_out": "attn.to_out.weight", "w_fc1": "mlp.fc1.weight", "w_fc2": "mlp.fc2.weight"}


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(n)), eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Modulate(nn.Module):
    def forward(self, h, shift, scale):
        return h * (1 + scale) + shift


class GatedResidual(nn.Module):
    def forward(self, base, gate, y):
        return base + gate * y


class NormRope(nn.Module):
    """Per-head RMSNorm over D, then 3-axis rotate-half RoPE on the first rot_dims channels;
    in and out [B, H, S, D]."""

    def __init__(self, head_dim, rot_dims, theta, eps):
        super().__init__()
        self.norm = RMSNorm(head_dim, eps)
        self.weight = self.norm.weight
        self.F, self.theta = rot_dims // 6, theta

    def forward(self, x, positions):
        x = self.norm(x)
        F = self.F
        inv = self.theta ** (-torch.arange(F, dtype=torch.float64) / F)
        out = x.clone()
        for a in range(3):
            ang = positions[:, a:a + 1].double() * inv.to(positions.device)  # [S, F]
            c, s = ang.cos().float(), ang.sin().float()
            x1, x2 = x[..., 2 * F * a:2 * F * a + F], x[..., 2 * F * a + F:2 * F * (a + 1)]
            out[..., 2 * F * a:2 * F * a + F] = x1 * c - x2 * s
            out[..., 2 * F * a + F:2 * F * (a + 1)] = x2 * c + x1 * s
        return out


class AttentionCore(nn.Module):
    """Exact attention in float32 on [B, H, S, D] (softmax over the whole sequence)."""

    def forward(self, q, k, v, scale):
        p = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) * scale, dim=-1)
        return torch.matmul(p, v)


class SwiGLU(nn.Module):
    def forward(self, h):
        value, gate = h.chunk(2, dim=-1)
        return value * torch.nn.functional.silu(gate)


class Attention(nn.Module):
    def __init__(self, M, H, D, rot, theta, eps):
        super().__init__()
        self.H, self.D = H, D
        self.to_qkv = nn.Linear(M, 3 * H * D, bias=False)
        self.q_norm_rope = NormRope(D, rot, theta, eps)
        self.k_norm_rope = NormRope(D, rot, theta, eps)
        self.core = AttentionCore()
        self.to_out = nn.Linear(H * D, M, bias=False)

    def forward(self, h, positions):
        B, S, _ = h.shape
        qkv = self.to_qkv(h).view(B, S, 3, self.H, self.D).permute(2, 0, 3, 1, 4)  # 3 B H S D
        q = self.q_norm_rope(qkv[0], positions)
        k = self.k_norm_rope(qkv[1], positions)
        o = self.core(q, k, qkv[2], 1.0 / math.sqrt(self.D))
        return self.to_out(o.transpose(1, 2).reshape(B, S, self.H * self.D))


class MLP(nn.Module):
    def __init__(self, M, F):
        super().__init__()
        self.fc1 = nn.Linear(M, 2 * F, bias=False)
        self.act = SwiGLU()
        self.fc2 = nn.Linear(F, M, bias=False)

    def forward(self, h):
        return self.fc2(self.act(self.fc1(h)))


class Block(nn.Module):
    def __init__(self, M, H, D, F, rot, theta=10000.0, eps=1e-5):
        super().__init__()
        self.norm1, self.norm2 = RMSNorm(M, eps), RMSNorm(M, eps)
        self.mod1, self.mod2 = Modulate(), Modulate()
        self.attn = Attention(M, H, D, rot, theta, eps)
        self.res1, self.res2 = GatedResidual(), GatedResidual()
        self.mlp = MLP(M, F)

    def forward(self, x, modulation, modulation_row, positions):
        """x [B, S, M]; modulation [R, 6, M]; modulation_row [S] (row of each token)."""
        m = modulation[modulation_row]  # [S, 6, M]
        shift1, scale1, gate1, shift2, scale2, gate2 = m.unbind(1)
        h = self.mod1(self.norm1(x), shift1, scale1)
        r = self.res1(x, gate1, self.attn(h, positions))
        h = self.mod2(self.norm2(r), shift2, scale2)
        return self.res2(r, gate2, self.mlp(h))


def tiny_config():
    """block.md's `tiny` preset geometry: 2x4x8 video tokens + 4 audio + 4 text."""
    return {"hidden": 64, "heads": 2, "head_dim": 32, "ffn_hidden": 128, "grid_t": 2,
            "grid_h": 4, "grid_w": 8, "rope_rot_dims": 24,
            "segments": [{"name": "video", "kind": "video", "start": 0, "length": 64},
                         {"name": "audio", "kind": "cond", "start": 64, "length": 4},
                         {"name": "text", "kind": "cond", "start": 68, "length": 4}]}


def make_inputs(config, seed=0, device="cpu"):
    """Block, x [1, S, M], modulation [t + 1, 6, M], modulation_row [S], positions [S, 3]."""
    g = torch.Generator().manual_seed(seed)
    c = config
    M, H, D, F = c["hidden"], c["heads"], c["head_dim"], c["ffn_hidden"]
    block = Block(M, H, D, F, c["rope_rot_dims"])
    with torch.no_grad():
        for name, p in block.named_parameters():
            if p.dim() == 2:
                p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p.shape[1]))
            else:
                p.copy_(1 + 0.1 * torch.randn(p.shape, generator=g))
    t, hh, w = c["grid_t"], c["grid_h"], c["grid_w"]
    S = sum(s["length"] for s in c["segments"])
    video = t * hh * w
    pos = torch.zeros(S, 3, dtype=torch.float64)
    idx = torch.arange(video)
    pos[:video, 0], pos[:video, 1], pos[:video, 2] = idx // (hh * w), (idx // w) % hh, idx % w
    pos[video:, 0] = torch.arange(S - video, dtype=torch.float64) + t  # conditioning after video
    x = torch.randn(1, S, M, generator=g)
    modulation = 0.1 * torch.randn(t + 1, 6, M, generator=g)
    modulation[:, 2] += 0.6
    modulation[:, 5] += 0.6
    row = torch.cat([idx // (hh * w), torch.full((S - video,), t)]).to(torch.int64)
    return (block.to(device), x.to(device), modulation.to(device), row.to(device),
            pos.to(device))
