"""Capture -> replay -> gate end to end on the CPU (host clock), and replay's errors."""
import json
import os

import h5py
import numpy as np
import pytest
import torch

import touchstone as tsp
from touchstone import fixture_io
from conftest import python_module
from touchstone import cli, kernels
import user_kernels


class ToyAttentionModel(torch.nn.Module):
    """A model that calls its attention module on [B, S, H, D] (or BHSD) q, k, v."""

    class Core(torch.nn.Module):
        def forward(self, q, k, v):
            # looked up on the module at each call, as models call F.scaled_dot_product_attention
            return user_kernels.attention_fp32(q, k, v, scale=q.size(-1) ** -0.5)

    def __init__(self, H=2, D=32, layout="BHSD"):
        super().__init__()
        self.H, self.D, self.layout = H, D, layout
        self.qkv = torch.nn.Linear(H * D, 3 * H * D)
        self.core = self.Core()

    def forward(self, x):
        B, S, _ = x.shape
        q, k, v = self.qkv(x).view(B, S, 3, self.H, self.D).unbind(2)  # BSHD
        if self.layout == "BHSD":
            q, k, v = (t.transpose(1, 2) for t in (q, k, v))
            return self.core(q, k, v).transpose(1, 2)
        return self.core(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)).transpose(1, 2)


def _capture(path, layout="BHSD", dtype=torch.bfloat16):
    torch.manual_seed(0)
    model = ToyAttentionModel(layout=layout).to(dtype)
    x = torch.randn(2, 96, 64).to(dtype)
    cap = tsp.AttentionCapture(layout="BHSD", batch=1)
    with torch.no_grad(), cap.hook(model.core):
        model(x)
        model(x)  # a second call is not taken
    assert cap.seen == 2
    cap.write(path, model="toy", segments=[{"name": "video", "kind": "video", "length": 80},
                                           {"name": "text", "kind": "cond", "length": 16}],
              grid=(2, 5, 8))
    return model, x, cap


def test_capture_from_a_hook_and_from_a_patched_function(ts, tmp_path):
    path = str(tmp_path / "att.h5")
    model, x, cap = _capture(path)
    with torch.no_grad():
        q_bshd = model.qkv(x).view(2, 96, 3, 2, 32)[1, :, 0]  # sequence 1 of the batch, [S, H, D]
    assert torch.equal(cap.q, q_bshd)
    fx = tsp.read_fixture(path)
    assert fx.dtype == "bfloat16" and fx.q.shape == (96, 2, 32)
    assert fx.config["grid_t"] == 2 and fx.config["softmax_scale"] == pytest.approx(32 ** -0.5)
    with h5py.File(path, "r") as f:
        assert f["attention/observed"].shape == (96, 2, 32)  # what the model's kernel returned
    assert ts("fixture", "validate", path).stdout.startswith("ok")
    # the context manager around a function the model calls; the second call this time
    cap2 = tsp.AttentionCapture(layout="BHSD", call=1)
    with torch.no_grad(), cap2.patch(user_kernels, "attention_fp32"):
        model(x)
        model(x[:, :50])
    assert cap2.seen == 2 and cap2.q.shape == (50, 2, 32) and cap2.scale == 32 ** -0.5
    assert torch.equal(cap2.q, model.qkv(x[:, :50]).view(2, 50, 3, 2, 32)[0, :, 0].detach())
    assert user_kernels.attention_fp32.__name__ == "attention_fp32"  # restored


def test_capture_replay_gate_on_the_cpu(ts, tmp_path):
    path = str(tmp_path / "att.h5")
    _capture(path)
    for kernel, name in (("torch_exact_fp64", None), ("user_kernels:attention_fp32", "mine"),
                         ("user_kernels:attention_bshd", "mine_bshd"),
                         ("user_kernels:garbage", "garbage")):
        args = ["replay", path, "--kernel", kernel, "--reps", "5", "--warmup", "1", "--device",
                "cpu", "--json"]
        assert cli.main(args + (["--name", name] if name else [])) == 0
    samples, clock = tsp.read_timings(path, "mine")
    assert clock == "host_steady" and len(samples) == 5 and np.all(samples > 0)
    files = fixture_io.output_files(path)  # each output in a file of its own
    with h5py.File(files["mine"], "r") as f, h5py.File(files["mine_bshd"], "r") as g:
        p = json.loads(f["outputs/mine/attention"].attrs["params"])
        assert p["device"] == "cpu" and p["layout"] == "BHSD"
        assert np.array_equal(f["outputs/mine/attention"][()], g["outputs/mine_bshd/attention"][()])
    report = str(tmp_path / "gate.json")
    ts("gate", "--gate", "sage_compat", "--fixture", path, "--baseline", "stored:torch_exact_fp64",
       "--candidate", "stored:mine", "--candidate", "stored:garbage", "--json", report, expect=1)
    with open(report) as fh:
        verdicts = {c["candidate"]: c for c in json.load(fh)["candidates"]}
    mine, bad = verdicts["stored:mine"], verdicts["stored:garbage"]
    rules = {r["id"]: r for r in mine["rules"]}
    assert rules["sage_like"]["status"] == "pass" and rules["vs_exact"]["status"] == "pass"
    # the two outputs were timed by separate replays: different timing runs, so their speed is
    # not judged (gates/README.md "Timing runs"), and the optional not_slower is missing
    speed = mine["details"]["speed"]
    assert speed["interval"] is None and "different timing runs" in speed["missing"]
    assert rules["not_slower"]["status"] == "missing"
    assert bad["verdict"] == "REJECT"
    assert {r["id"]: r for r in bad["rules"]}["sage_like"]["status"] == "fail"


def test_a_kernel_writing_into_its_inputs_changes_neither_the_fixture_nor_later_calls(ts, tmp_path):
    # On the CPU the first input copy maps the fixture file copy-on-write (no 1.6 GB clone at
    # block24): what a kernel writes there stays private to the process.
    path = str(tmp_path / "att.h5")
    _capture(path)
    assert cli.main(["replay", path, "--kernel", "user_kernels:writes_into_its_inputs", "--name",
                     "scribbler", "--reps", "3", "--warmup", "1", "--device", "cpu"]) == 0
    assert cli.main(["replay", path, "--kernel", "user_kernels:attention_fp32", "--name", "clean",
                     "--reps", "1", "--warmup", "0", "--device", "cpu"]) == 0
    assert ts("fixture", "validate", path).stdout.startswith("ok")  # every input digest holds
    clean = tsp.read_tensor(path, "/outputs/clean/attention")
    assert np.any(clean != 0)
    # within one replay the scribbling holds: the stored call ran on inputs already zeroed
    assert np.all(tsp.read_tensor(path, "/outputs/scribbler/attention") == 0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("n", [1, 1000, (3 << 10) + 7])
def test_staged_transfers_keep_every_byte(monkeypatch, n):
    from touchstone import transfer

    monkeypatch.setattr(transfer, "STAGE_BYTES", 1 << 10)  # many stages, a ragged last one
    # every bit pattern, NaNs among them: compared as bits, never through arithmetic
    x = torch.randint(-32768, 32767, (n,), dtype=torch.int16).view(torch.bfloat16)
    up = transfer.to_device(x, torch)
    assert up.device.type == "cuda" and torch.equal(up.cpu().view(torch.int16), x.view(torch.int16))
    down = transfer.to_host(up, torch)
    assert down.device.type == "cpu" and torch.equal(down.view(torch.int16), x.view(torch.int16))


def test_sdpa_where_torch_has_it(tmp_path):
    path = str(tmp_path / "att.h5")
    _capture(path)
    if not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        with pytest.raises(tsp.CaptureError, match="needs torch >= 2.1"):
            kernels.resolve("sdpa").make(torch)
        return
    assert cli.main(["replay", path, "--kernel", "sdpa", "--reps", "3", "--device", "cpu"]) == 0
    ref = torch.from_numpy(tsp.read_tensor(path, "/attention/observed"))
    got = torch.from_numpy(tsp.read_tensor(path, "/outputs/sdpa/attention"))
    assert torch.linalg.norm(got - ref) / torch.linalg.norm(ref) < 1e-2


@pytest.mark.parametrize("kernel, message", [
    ("nope", "unknown kernel 'nope'"),
    ("json:missing", "has no callable 'missing'"),  # a module without torch: a fast start
    ("no_such_module:f", "cannot import module 'no_such_module'"),
])
def test_a_bad_kernel_name_is_bad_input_before_any_device_check(tmp_path, kernel, message):
    # --device cuda where there is none would fail too: the kernel name is checked first
    r = python_module("replay", str(tmp_path / "missing.h5"), "--kernel", kernel,
                      "--device", "cuda")
    assert r.returncode == 2 and message in r.stderr and r.stderr.count("\n") == 1, r.stderr


@pytest.mark.parametrize("kernel, message", [
    ("user_kernels:raises", "raised RuntimeError: CUDA error"),
    ("user_kernels:wrong_shape", "returned (1, 2, 95, 32)"),
])
def test_a_failing_kernel_leaves_the_fixture_as_it_was(tmp_path, capsys, kernel, message):
    path = str(tmp_path / "att.h5")
    _capture(path)
    before = open(path, "rb").read()
    assert cli.main(["replay", path, "--kernel", kernel, "--reps", "1", "--warmup", "0"]) == 2
    assert message in capsys.readouterr().err
    assert open(path, "rb").read() == before and sorted(os.listdir(tmp_path)) == ["att.h5"]


def test_help_lists_the_built_in_kernels():
    r = python_module("replay", "--help")
    assert r.returncode == 0
    for name in kernels.BUILTIN:
        assert f"  {name} " in r.stdout
    # Off a terminal (no COLUMNS): 100 columns, as the C++ CLI's help.
    assert max(map(len, r.stdout.splitlines())) <= 100, max(r.stdout.splitlines(), key=len)


def test_the_summary_fits_the_terminal_and_names_the_fixture_once(monkeypatch):
    from touchstone import replay

    monkeypatch.delenv("COLUMNS", raising=False)
    one = {"name": "sparge_sol_tau1.3_bf16_nocomp", "median_ms": 1.5, "reps": 10,
           "clock": "host_steady", "device": "cpu", "intermediates": [],
           "output": "/outputs/sparge_sol_tau1.3_bf16_nocomp/attention",
           "timings": "/timings/sparge_sol_tau1.3_bf16_nocomp"}
    fixture = "/tmp/pytest-of-someone/pytest-12/test_replay0/captured_block24.h5"
    several = {"fixture": fixture, "timing_run": "3f2c9a1e-77c4-4a51-9a0b-0c1d2e3f4a5b",
               "kernels": [one, dict(one, name="sdpa_cudnn")], "reps": 10,
               "clock": "host_steady", "device": "cpu", "skipped": {}}
    for text in (replay.summary_line(dict(one, fixture=fixture)), replay.summary_line(several)):
        assert max(map(len, text.splitlines())) <= 100, text
    assert replay.summary_line(several).count(fixture) == 1
