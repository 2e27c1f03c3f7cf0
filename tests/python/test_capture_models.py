"""Capture from models nobody here wrote (docs/python.md "Capture from models nobody here
wrote"): torchvision's vit_b_16 (random weights; it calls its attention with query=...) and
nn.MultiheadAttention models into valid fixtures, then replay and gate; keyword arguments on
any torch; a hook or patch that sees no call is an error when its with-block ends."""
import json
import os
import time

import pytest
import torch

import touchstone
from touchstone.testing import assert_sage_like

import user_kernels


# sage_compat's accuracy rules: its speed rule would compare the host's time of a replayed
# kernel with the emulation's, which is no speed baseline.
_ACCURACY = {"schema": "touchstone.gate/1", "name": "sage-compatible, accuracy", "baseline": "sage2",
             "tensor": "attention", "rules": [
                 {"id": "sage_like", "metric": "rel_l2", "against": "baseline", "max": 0.04},
                 {"id": "vs_exact", "metric": "rel_l2", "against": "exact", "max_ratio_to_baseline": 1.5},
                 {"id": "head_gain", "metric": "gain_error_worst_head", "against": "exact", "max": 0.01}]}


def _gate(path, ts):
    """Gates a user kernel on the captured fixture: in-process (touchstone.testing) where the
    extension is, else replayed and judged by the CLI (the GPU machine's other Python)."""
    if touchstone.extension_available():
        v = assert_sage_like(path, user_kernels.attention_fp32)
        assert v.verdict == "ACCEPT"
        return
    from touchstone import kernels, replay

    replay.replay(path, kernels.resolve("user_kernels:attention_fp32"), reps=3, warmup=0, rotate=1)
    gate = os.path.join(os.path.dirname(path), "accuracy.gate.json")
    with open(gate, "w") as fh:
        json.dump(_ACCURACY, fh)
    ts("gate", "--gate", gate, "--fixture", path, "--candidate", "stored:attention_fp32")


def _exact_qkv_attention(cap):
    """What the captured q, k, v give under exact attention, [S, H, D]."""
    q, k, v = (t.double().permute(1, 0, 2) for t in (cap.q, cap.k, cap.v))
    p = torch.softmax(q @ k.transpose(-1, -2) * q.size(-1) ** -0.5, dim=-1)
    return (p @ v).permute(1, 0, 2)


def test_vit_b_16_attention_is_captured_replayed_and_gated(tmp_path, ts):
    torchvision = pytest.importorskip("torchvision")
    t0 = time.perf_counter()
    torch.manual_seed(0)
    # Random weights; 64x64 images (16 patches and the class token) keep the whole model's
    # forward to about a second on 2 cores (224x224: 197 tokens, 10x the work).
    vit = torchvision.models.vit_b_16(image_size=64).eval()
    attn = vit.encoder.layers[3].self_attention
    cap = touchstone.AttentionCapture()
    with torch.no_grad(), cap.hook(attn):
        vit(torch.randn(1, 3, 64, 64))
    assert cap.seen == 1 and tuple(cap.q.shape) == (17, 12, 64)
    # q, k, v are the layer's own in-projections: attention on them, then out_proj, is what the
    # module returned for that call.
    cap2 = touchstone.AttentionCapture()
    outs = []
    with torch.no_grad(), cap2.hook(attn):
        x = torch.randn(1, 17, 768)
        outs.append(attn(query=x, key=x, value=x, need_weights=False)[0])
    heads = _exact_qkv_attention(cap2).reshape(17, 768).float()
    mine = torch.nn.functional.linear(heads, attn.out_proj.weight, attn.out_proj.bias)
    assert torch.allclose(mine, outs[0][0], atol=1e-4, rtol=1e-4)

    path = str(tmp_path / "vit.h5")
    cap.write(path, model="torchvision vit_b_16 (random weights), encoder layer 3",
              segments=[{"name": "class", "kind": "cond", "length": 1},
                        {"name": "patches", "kind": "video", "length": 16}], grid=(1, 4, 4))
    ts("fixture", "validate", path)
    _gate(path, ts)
    assert time.perf_counter() - t0 < 120


@pytest.mark.parametrize("batch_first", [True, False])
def test_multihead_attention_models_are_captured_and_gated(tmp_path, batch_first, ts):
    torch.manual_seed(1)

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = torch.nn.MultiheadAttention(64, 4, batch_first=batch_first)

        def forward(self, x):
            return self.attn(x, x, x, need_weights=False)[0]  # positional, as most models call it

    m = Model().eval()
    x = torch.randn(1, 96, 64) if batch_first else torch.randn(96, 1, 64)
    cap = touchstone.AttentionCapture()
    with torch.no_grad(), cap.hook(m.attn):
        y = m(x)
    assert tuple(cap.q.shape) == (96, 4, 16) and cap.out is None
    heads = _exact_qkv_attention(cap).reshape(96, 64).float()
    want = y[0] if batch_first else y[:, 0]
    assert torch.allclose(torch.nn.functional.linear(heads, m.attn.out_proj.weight,
                                                     m.attn.out_proj.bias), want, atol=1e-4)
    path = str(tmp_path / "mha.h5")
    cap.write(path, model="nn.MultiheadAttention", grid=(2, 6, 8))
    mask = torch.zeros(96, 96, dtype=torch.bool)
    with pytest.raises(touchstone.CaptureError, match="attn_mask: a fixture holds non-causal"):
        with touchstone.AttentionCapture().hook(m.attn):
            m.attn(x, x, x, attn_mask=mask)
    ts("fixture", "validate", path)
    _gate(path, ts)


def test_keyword_arguments_are_seen_on_any_torch(tmp_path):
    class Core(torch.nn.Module):
        def forward(self, q, k, v, scale=None):
            return user_kernels.attention_fp32(q, k, v, scale)

    core = Core()
    q, k, v = (torch.randn(1, 2, 16, 8) for _ in range(3))
    cap = touchstone.AttentionCapture(layout="BHSD")
    with cap.hook(core):
        core(q=q, k=k, v=v, scale=0.3)
    assert cap.captured and cap.scale == 0.3 and tuple(cap.q.shape) == (16, 2, 8)
    assert "forward" not in vars(core)  # the wrapper is gone
    cap.write(str(tmp_path / "kw.h5"), model="kwargs")


def test_a_hook_or_patch_that_sees_no_call_is_an_error_at_the_end():
    lin = torch.nn.Linear(4, 4)
    unused = torch.nn.MultiheadAttention(8, 2)
    cap = touchstone.AttentionCapture()
    with pytest.raises(touchstone.CaptureError, match=r"hook on MultiheadAttention: saw 0 calls"):
        with cap.hook(unused):
            lin(torch.randn(1, 4))

    class Owner:
        @staticmethod
        def attention(q, k, v):
            return q

    cap = touchstone.AttentionCapture()
    with pytest.raises(touchstone.CaptureError, match=r"patch of .*attention: saw 0 calls.*"
                                                      r"holds its own reference"):
        with cap.patch(Owner, "attention"):
            pass
    # An error inside the block is not hidden by the capture's own.
    with pytest.raises(ZeroDivisionError):
        with touchstone.AttentionCapture().hook(unused):
            1 / 0
    # call=1 with one call seen: says so.
    class Three(torch.nn.Module):
        def forward(self, q, k, v):
            return q

    cap = touchstone.AttentionCapture(call=1)
    core = Three()
    with pytest.raises(touchstone.CaptureError, match="saw 1 call, wanted call 1"):
        with cap.hook(core):
            core(torch.randn(1, 2, 4, 8), torch.randn(1, 2, 4, 8), torch.randn(1, 2, 4, 8))
