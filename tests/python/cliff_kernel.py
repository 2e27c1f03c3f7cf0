"""A Python kernel with a planted cliff for `python3 -m touchstone scan` (tests/python/test_scan.py):
float32 attention, right up to CLIFF (700) tokens and 1.5x its output above."""
import torch

CLIFF = 700


def attention(q, k, v, scale):
    p = torch.softmax(torch.matmul(q.float(), k.float().transpose(-1, -2)) * scale, dim=-1)
    out = torch.matmul(p, v.float())
    return out * 1.5 if q.shape[2] > CLIFF else out
