"""A stand-in for torch.nn.attention.flex_attention (torch >= 2.5), for testing touchstone's
flex_sol plumbing on torch 1.13 and the CPU (TOUCHSTONE_FLEX_STAND_IN=flex_attention_stand_in).

BlockMask.from_kv_blocks takes what the real one takes (kv_num_blocks, kv_indices [B, H, QB, KB]
int32 with the listed blocks first, optional full_kv_*, BLOCK_SIZE, mask_mod, seq_lengths) and,
like the real kernel, applies mask_mod only inside the partial (kv_*) blocks: full blocks count
whole, unlisted blocks not at all. flex_attention is exact (float64) attention over the pairs
that leaves (fully masked rows give 0, as FlexAttention's do), returned in the query's dtype.
pairs(S) exposes those pairs for tests. Nothing here says anything about the real kernel.
"""
import math

import torch

__touchstone_stand_in__ = True


class BlockMask:
    def __init__(self, kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices,
                 BLOCK_SIZE, mask_mod, seq_lengths):
        self.kv_num_blocks, self.kv_indices = kv_num_blocks, kv_indices
        self.full_kv_num_blocks, self.full_kv_indices = full_kv_num_blocks, full_kv_indices
        self.BLOCK_SIZE, self.mask_mod, self.seq_lengths = BLOCK_SIZE, mask_mod, seq_lengths

    @classmethod
    def from_kv_blocks(cls, kv_num_blocks, kv_indices, full_kv_num_blocks=None,
                       full_kv_indices=None, BLOCK_SIZE=128, mask_mod=None, seq_lengths=None):
        for name, t, rank in (("kv_num_blocks", kv_num_blocks, 3), ("kv_indices", kv_indices, 4),
                              ("full_kv_num_blocks", full_kv_num_blocks, 3),
                              ("full_kv_indices", full_kv_indices, 4)):
            if t is not None:
                assert t.dtype == torch.int32 and t.dim() == rank, f"{name}: int32 rank {rank}"
        assert kv_indices.shape[:3] == kv_num_blocks.shape
        bs = BLOCK_SIZE if isinstance(BLOCK_SIZE, tuple) else (BLOCK_SIZE, BLOCK_SIZE)
        return cls(kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices, bs,
                   mask_mod, seq_lengths)

    @staticmethod
    def _listed(num, idx):
        """bool [B, H, QB, KB]: the first num[b, h, i] entries of idx[b, h, i] set."""
        KB = idx.size(-1)
        take = torch.arange(KB)[None, None, None, :] < num[..., None].long()
        out = torch.zeros(idx.shape, dtype=torch.bool)
        return out.scatter_(-1, idx.long(), take) if KB else out

    def to_dense(self):
        dense = self._listed(self.kv_num_blocks.cpu(), self.kv_indices.cpu())
        if self.full_kv_num_blocks is not None:
            dense |= self._listed(self.full_kv_num_blocks.cpu(), self.full_kv_indices.cpu())
        return dense.to(torch.int32)

    def pairs(self, S, kv_len=None):
        """bool [B, H, S, kv_len]: the (query, key) pairs attention takes (computed once)."""
        kv_len = kv_len or S
        key = (S, kv_len)
        if getattr(self, "_pairs_key", None) != key:
            self._pairs, self._pairs_key = self._materialise(S, kv_len), key
        return self._pairs

    def _materialise(self, S, kv_len):
        bq, bk = self.BLOCK_SIZE
        partial = self._listed(self.kv_num_blocks.cpu(), self.kv_indices.cpu())
        full = (self._listed(self.full_kv_num_blocks.cpu(), self.full_kv_indices.cpu())
                if self.full_kv_num_blocks is not None else torch.zeros_like(partial))
        rows, cols = torch.arange(S) // bq, torch.arange(kv_len) // bk
        expand = lambda m: m[:, :, rows][:, :, :, cols]
        out = expand(full)
        B, H = partial.shape[:2]
        if self.mask_mod is not None:
            q_idx, kv_idx = torch.arange(S)[:, None], torch.arange(kv_len)[None, :]
            dev = self.kv_indices.device
            for b in range(B):
                for h in range(H):
                    m = self.mask_mod(torch.tensor(b, device=dev), torch.tensor(h, device=dev),
                                      q_idx.to(dev), kv_idx.to(dev)).cpu()
                    out[b, h] |= expand(partial)[b, h] & m.expand(S, kv_len)
        else:
            out |= expand(partial)
        return out


def flex_attention(query, key, value, score_mod=None, block_mask=None, scale=None,
                   enable_gqa=False, return_lse=False, kernel_options=None):
    assert score_mod is None and not enable_gqa and not return_lse
    scale = scale if scale is not None else query.size(-1) ** -0.5
    s = torch.matmul(query.double(), key.double().transpose(-1, -2)) * scale
    if block_mask is not None:
        s = s.masked_fill(~block_mask.pairs(query.size(2), key.size(2)).to(s.device), -math.inf)
    p = torch.softmax(s, dim=-1).nan_to_num(0.0)
    return torch.matmul(p, value.double()).to(query.dtype)
