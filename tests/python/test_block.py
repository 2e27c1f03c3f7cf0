"""A PyTorch block (block_model.py) captured stage by stage and replayed by touchstone's float64
block: every stage within 1e-5 in float32. On the GPU machine it runs on CUDA too (TF32 off)."""
import os

import numpy as np
import pytest
import torch

import touchstone as tsp
from block_model import LAYOUTS, STAGE_OF, WEIGHTS, make_inputs, tiny_config

HERE = os.path.dirname(os.path.abspath(__file__))
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def capture_block(path, device="cpu", tamper=None):
    cfg = tiny_config()
    block, x, mod, row, pos = make_inputs(cfg, seed=5, device=device)
    cap = tsp.BlockCapture(block, STAGE_OF, layouts=LAYOUTS)
    with torch.no_grad(), cap:
        block(x, mod, row, pos)
    stages = cap.stages(cfg)
    if tamper:
        stages[tamper] = stages[tamper] * (1 + 1e-4)
    tsp.write_block_fixture(path, cfg, x=x[0], modulation=mod, modulation_row=row, positions=pos,
                            weights=tsp.weights_from(block, WEIGHTS), stages=stages,
                            model="tests/python/block_model.py", step=1)
    return stages


@pytest.mark.parametrize("device", DEVICES)
def test_every_stage_of_a_float32_block_is_within_1e_5_of_touchstones(ts, tmp_path, device):
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
    path = str(tmp_path / "block.h5")
    stages = capture_block(path, device)
    assert list(stages) == list(tsp.STAGES)
    assert ts("fixture", "validate", path).stdout.startswith("ok")
    ts("reference", path, "--block", "--linear", "fp64", "--attention", "exact")
    r = ts.json("compare", path, "--stages", "observed", "block_fp64_exact", "--gate",
                os.path.join(HERE, "stages_1e-5.gate.json"))
    rows = {s["stage"]: s for s in r["stages"]}
    assert [s["stage"] for s in r["stages"]] == list(tsp.STAGES)  # one table of stages
    for stage in tsp.STAGES:
        rel = rows[stage]["metrics"]["rel_l2"]
        assert rows[stage]["status"] == "pass" and 0 < rel <= 1e-5, (stage, rel)
    assert r["failed"] == 0 and r["compared"] == 14
    # the fixture's attention group is what the block's attention kernel saw
    fx = tsp.read_fixture(path)
    assert np.array_equal(fx.q, stages["q_rope"].cpu().numpy())
    assert np.array_equal(fx.v, stages["qkv"][:, 2].cpu().numpy())


def test_a_stage_off_by_1e_4_is_named(ts, tmp_path):
    path = str(tmp_path / "block.h5")
    capture_block(path, tamper="out_proj")
    ts("reference", path, "--block", "--linear", "fp64", "--attention", "exact")
    r = ts.json("compare", path, "--stages", "observed", "block_fp64_exact", "--gate",
                os.path.join(HERE, "stages_1e-5.gate.json"), expect=1)
    assert r["first_failing_stage"] == "out_proj"


def test_block_capture_names_what_is_wrong():
    cfg = tiny_config()
    block = make_inputs(cfg)[0]
    with pytest.raises(tsp.CaptureError, match="no module named 'attn.nope'"):
        tsp.BlockCapture(block, {"attn.nope": "qkv"})
    with pytest.raises(tsp.CaptureError, match="unknown stage 'qkv_proj'"):
        tsp.BlockCapture(block, {"attn.to_qkv": "qkv_proj"})
    cap = tsp.BlockCapture(block, {"attn.to_out": "qkv"})  # a module of the wrong width
    with torch.no_grad(), cap:
        block(*make_inputs(cfg)[1:])
    with pytest.raises(tsp.CaptureError, match=r"stage qkv: \(72, 64\) holds 4608 values"):
        cap.stages(cfg)
