"""A kernel team's CI test (docs/ci.md): the kernel must be a drop-in for SageAttention 2.

Run: pytest -p touchstone.pytest_plugin --touchstone-reports reports/ ci_example.py"""
import torch

from touchstone.testing import assert_gate, assert_sage_like


def my_attention(q, k, v, softmax_scale):
    """The kernel under test: [1, H, S, D] in and out (here plain attention in float32)."""
    p = torch.softmax(q.float() @ k.float().transpose(-1, -2) * softmax_scale, dim=-1)
    return (p @ v.float()).to(q.dtype)


def test_my_attention_is_sage_like(tiny_fixture):
    assert_sage_like(tiny_fixture, my_attention)


def test_my_attention_against_the_hopper_preset(tiny_fixture):
    assert_gate(tiny_fixture, my_attention, gate="sage_compat", baseline="sage2:preset=sm90")
