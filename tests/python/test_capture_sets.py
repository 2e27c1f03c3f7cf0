"""Chain sets captured from a PyTorch model (docs/python.md "Capturing a chain set"): a stack of
block_model.py's blocks run by a two-step Euler sampler, captured layer by layer
(AttentionSetCapture) and block by block (BlockSetCapture) into DIR/block<bb>_step<ss>.h5 files
that `touchstone fixture validate` accepts and `touchstone chain` reads; each file holds its own
block's and step's tensors, so a fault planted in one block at one step shows in that file alone;
bad input is a one-line CaptureError."""
import json
import os
import re

import h5py
import numpy as np
import pytest
import torch

import touchstone as tsp
from block_model import LAYOUTS, STAGE_OF, WEIGHTS, AttentionCore, make_inputs, tiny_config

HERE = os.path.dirname(os.path.abspath(__file__))
BLOCKS, STEPS = 3, 2
FILES = [f"block{b:02d}_step{s:02d}.h5" for b in range(BLOCKS) for s in range(STEPS)]
MODEL = "tests/python/test_capture_sets.py stack"


class HeadZeroDoubledFromCall(AttentionCore):
    """Exact attention with head 0's output doubled from its call-th call on: a fault planted in
    one block from one step on."""

    def __init__(self, call):
        super().__init__()
        self.at, self.calls = call, 0

    def forward(self, q, k, v, scale):
        o = super().forward(q, k, v, scale)
        self.calls += 1
        if self.calls > self.at:
            o = o.clone()
            o[:, 0] *= 2
        return o


class Stack(torch.nn.Module):
    """BLOCKS blocks of block_model.py, each with weights and a modulation table of its own; the
    timestep t scales every table (a DiT's timestep conditioning), so the steps differ."""

    def __init__(self, fault=True):
        super().__init__()
        made = [make_inputs(tiny_config(), seed=10 + b) for b in range(BLOCKS)]
        self.blocks = torch.nn.ModuleList(m[0] for m in made)
        self.register_buffer("modulation", torch.stack([m[2] for m in made]))
        self.register_buffer("row", made[0][3])
        self.register_buffer("positions", made[0][4])
        self.x0 = made[0][1]
        if fault:
            self.blocks[1].attn.core = HeadZeroDoubledFromCall(1)  # block 1, step 1 on

    def block_modulation(self, b, t):
        return self.modulation[b] * (1 + 0.1 * t)

    def forward(self, x, t):
        for b, block in enumerate(self.blocks):
            x = block(x, self.block_modulation(b, t), self.row, self.positions)
        return x


def sample(model, steps=STEPS):
    """An Euler sampler towards the model's output: x += (model(x, t) - x) / steps."""
    x = model.x0
    for s in range(steps):
        x = x + (model(x, 1 - s / steps) - x) / steps
    return x


def block_inputs(args, kwargs):
    x, modulation, row, positions = args
    return {"x": x[0], "modulation": modulation, "modulation_row": row, "positions": positions}


def capture_blocks(model, directory, inputs=block_inputs, **kw):
    return tsp.BlockSetCapture(model, "blocks.{b}", STAGE_OF, directory, model=MODEL,
                               config=tiny_config(), inputs=inputs, weights=WEIGHTS,
                               layouts=LAYOUTS, **kw)


def capture_attention(model, directory, **kw):
    return tsp.AttentionSetCapture(model, "blocks.{b}.attn.core", directory, model=MODEL,
                                   segments=tiny_config()["segments"], grid=(2, 4, 8), **kw)


@pytest.fixture(scope="module")
def block_set(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("capture_sets") / "blocks")
    model = Stack()
    cap = capture_blocks(model, d)
    with torch.no_grad(), cap:
        sample(model)
    assert cap.files == [os.path.join(d, f) for f in sorted(FILES, key=lambda f: f[-7:])]
    return d


@pytest.fixture(scope="module")
def attention_set(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("capture_sets") / "attention")
    model = Stack()
    with torch.no_grad(), capture_attention(model, d):
        sample(model)
    return d


def set_files(d):
    return sorted(n for n in os.listdir(d) if n.endswith(".h5"))


@pytest.mark.parametrize("which", ["block_set", "attention_set"])
def test_one_valid_fixture_per_block_and_step_with_its_place_in_the_set(which, request, ts):
    d = request.getfixturevalue(which)
    assert set_files(d) == FILES
    for name in FILES:
        path = os.path.join(d, name)
        b, s = map(int, re.fullmatch(r"block(\d+)_step(\d+)\.h5", name).groups())
        with h5py.File(path, "r") as f:
            a = f.attrs
            assert (a["block_index"], a["step"]) == (b, s)
            assert (a["source"], a["model"]) == ("captured", MODEL)
            want = f"blocks.{b}" + (".attn.core" if which == "attention_set" else "")
            assert a["captured_module"] == want
            assert "chain" not in a  # captured: `touchstone chain` starts each step from its x
            assert ("block" in f) == (which == "block_set")
        assert ts("fixture", "validate", path).stdout.startswith("ok")


def test_each_block_file_holds_that_block_and_steps_own_tensors(block_set):
    # The same stack run by hand, block by block: what each block was fed at each step.
    model, fed = Stack(), {}
    with torch.no_grad():
        x = model.x0
        for s in range(STEPS):
            t, h = 1 - s / STEPS, x
            for b, block in enumerate(model.blocks):
                fed[b, s] = (h[0].numpy(), model.block_modulation(b, t).numpy())
                h = block(h, model.block_modulation(b, t), model.row, model.positions)
            x = x + (h - x) / STEPS
    def stored(b, s, what):
        return tsp.read_tensor(os.path.join(block_set, f"block{b:02d}_step{s:02d}.h5"),
                               "/block/" + what)

    for (b, s), (x, mod) in fed.items():
        assert np.array_equal(stored(b, s, "x"), x), (b, s)
        assert np.array_equal(stored(b, s, "modulation"), mod), (b, s)
        assert np.array_equal(stored(b, s, "weights/w_qkv"),
                              model.blocks[b].attn.to_qkv.weight.detach().numpy()), (b, s)
    # Blocks have weights of their own, steps inputs of their own.
    assert not np.array_equal(stored(1, 0, "weights/w_qkv"), stored(0, 0, "weights/w_qkv"))
    assert not np.array_equal(stored(1, 0, "x"), stored(1, 1, "x"))


def test_a_fault_planted_in_block_1_at_step_1_shows_in_that_block_file_alone(block_set, ts):
    failing = {}
    for name in FILES:
        path = os.path.join(block_set, name)
        ts("reference", path, "--block", "--linear", "fp64", "--attention", "exact")
        r = ts.json("compare", path, "--stages", "observed", "block_fp64_exact", "--gate",
                    os.path.join(HERE, "stages_1e-5.gate.json"), expect=None)
        if r["failed"]:
            failing[name] = r["first_failing_stage"]
    assert failing == {"block01_step01.h5": "attention"}


def test_a_fault_planted_in_block_1_at_step_1_shows_in_that_attention_file_alone(attention_set,
                                                                                  ts):
    rel = {}
    for name in FILES:
        path = os.path.join(attention_set, name)
        ts("reference", path, "--backend", "exact")
        rel[name] = ts.json("compare", path, "observed", "exact")["metrics"]["rel_l2"]
    assert rel.pop("block01_step01.h5") > 0.3, rel
    assert max(rel.values()) < 1e-5, rel


def test_touchstone_chain_runs_on_the_captured_block_set(block_set, ts, tmp_path):
    report = tmp_path / "chain.json"
    r = ts("chain", block_set, "--candidate", "sol:tau=3", "--candidate", "dense", "--json", report,
           expect=None)
    assert r.returncode in (0, 1), r.stderr
    assert "largest own error: block" in r.stdout
    j = json.loads(report.read_text())
    assert (j["set"]["blocks"], j["set"]["steps"], j["set"]["dt"]) == (BLOCKS, STEPS, None)
    assert [os.path.basename(f) for f in j["set"]["files"]] == sorted(FILES, key=lambda f: f[-7:])
    assert [len(c["cells"]) for c in j["chains"]] == [BLOCKS * STEPS] * 2
    assert j["chains"][1]["verdict"]["verdict"] == "ACCEPT"  # dense: the baseline itself
    # Every step starts from the stored x of its block 0 (the sampler's, not a step rule's);
    # later blocks read what the stack computed, which the float32 model did not.
    assert [c["matches_fixture"] for c in j["baseline_cells"]] == [True, False, False] * STEPS
    assert j["exit_code"] == r.returncode


def test_touchstone_chain_on_an_attention_set_names_what_is_missing_and_where(attention_set, ts):
    # An attention set holds no block inputs or weights: chain and policy refuse it in one line
    # naming the file and /block, and point to the capture that writes whole blocks.
    for cmd in (("chain", attention_set, "--candidate", "sol:tau=3"),
                ("policy", attention_set, "--tau", "3")):
        r = ts(*cmd, expect=2)
        assert r.stdout == ""
        err = r.stderr
        assert err.endswith("\n") and err.count("\n") == 1, err
        assert os.path.join(attention_set, "block00_step00.h5") + ": no /block" in err, err
        assert "attention-only fixture" in err and "touchstone.BlockSetCapture" in err, err


def test_a_step_is_what_cap_step_encloses_and_steps_picks_which_are_written(tmp_path):
    model = Stack(fault=False)
    d = str(tmp_path / "guided")
    cap = capture_attention(model, d, call=1, steps={1})
    starts = []
    with torch.no_grad(), cap:
        x = model.x0
        for s in range(STEPS):
            starts.append(x)
            with cap.step():  # two forwards a step, as a guided sampler calls the model
                t = 1 - s / STEPS
                cond, uncond = model(x, t), model(x * 0.5, t)
            x = x + (uncond + 1.5 * (cond - uncond) - x) / STEPS
    assert cap.step_index == STEPS - 1
    assert set_files(d) == [f"block{b:02d}_step01.h5" for b in range(BLOCKS)]
    # call=1 kept each layer's second call of step 1: the unconditional forward, on x * 0.5
    seen = []
    handle = model.blocks[0].attn.core.register_forward_hook(
        lambda m, args, out: seen.append(args[0][0].permute(1, 0, 2).numpy()))
    with torch.no_grad():
        model(starts[1] * 0.5, 1 - 1 / STEPS)
    handle.remove()
    assert np.array_equal(tsp.read_fixture(os.path.join(d, "block00_step01.h5")).q, seen[0])


def test_an_existing_set_is_replaced_only_with_force(tmp_path):
    d = tmp_path / "set"
    d.mkdir()
    (d / "block07_step00.h5").write_bytes(b"an older set")
    model = Stack(fault=False)
    with pytest.raises(tsp.CaptureError, match=r"block07_step00.h5: exists \(1 file of a set .*"
                                               r"force=True replaces the set"):
        with capture_attention(model, str(d)):
            sample(model, steps=1)
    assert set_files(d) == ["block07_step00.h5"]
    with torch.no_grad(), capture_attention(model, str(d), force=True):
        sample(model, steps=1)
    assert set_files(d) == [f"block{b:02d}_step00.h5" for b in range(BLOCKS)]  # no stale file


class TwoCores(torch.nn.Module):
    """Two attention cores; `heads` gives each its head count, `skip` a (core, step) not called."""

    def __init__(self, heads=(2, 2), skip=None):
        super().__init__()
        self.cores = torch.nn.ModuleList(AttentionCore() for _ in heads)
        self.heads, self.skip, self.calls = heads, skip, 0

    def forward(self, x):
        for i, (core, h) in enumerate(zip(self.cores, self.heads)):
            if (i, self.calls) != self.skip:
                q = x.reshape(1, h, 16, -1)
                core(q, q, q, 0.5)
        self.calls += 1
        return x


def one_line_error(build, run=None, match=""):
    with pytest.raises(tsp.CaptureError, match=match) as e:
        cap = build()
        if run is not None:
            with torch.no_grad(), cap:
                run(cap)
    assert "\n" not in str(e.value), str(e.value)
    return str(e.value)


def test_bad_input_is_a_one_line_capture_error(tmp_path):
    d = str(tmp_path / "set")
    x = torch.randn(1, 16, 16)

    def cores(model, **kw):
        return lambda: tsp.AttentionSetCapture(model, "cores.{b}", d, model="two", force=True, **kw)

    m = TwoCores()
    one_line_error(lambda: tsp.AttentionSetCapture(m, "layers.{b}.attn", d, model="two"),
                   match=r"no module of the TwoCores matches attention layer pattern "
                         r"'layers.\{b\}.attn' \(its modules: cores, cores.0, cores.1\)")
    one_line_error(lambda: tsp.AttentionSetCapture(m, "cores.0", d, model="two"),
                   match=r"needs one \{b\}")
    one_line_error(lambda: tsp.AttentionSetCapture(m, [m.cores[0], AttentionCore()], d,
                                                   model="two"),
                   match="attention layer 1: the AttentionCore given is not one of the TwoCores's")
    one_line_error(lambda: tsp.AttentionSetCapture(m, m.cores[1], d, model="two"),
                   match="attention layers given as a AttentionCore: expected a pattern")
    listed = tsp.AttentionSetCapture(m, m.cores, d, model="two").targets  # a ModuleList in order
    assert {b: name for b, (name, _) in listed.items()} == {0: "cores.0", 1: "cores.1"}
    one_line_error(cores(m, block_index=3), match="unknown keyword block_index")
    one_line_error(cores(TwoCores(heads=(2, 4))), lambda cap: cap.module(x),
                   match=r"block 1 of step 0 \(cores.1\): q, k, v \[S, H, D\] = \[16, 4, 4\], "
                         r"scale default, block 0 of step 0 \(cores.0\) has "
                         r"\[S, H, D\] = \[16, 2, 8\]")
    one_line_error(cores(TwoCores(skip=(1, 1))), lambda cap: [cap.module(x) for _ in range(2)],
                   match=r"block 1 of step 1 \(cores.1\): saw 0 calls, wanted call 0")
    one_line_error(cores(TwoCores()), lambda cap: None, match=r"no step captured \(0 steps seen\)")
    one_line_error(cores(m, steps={5}), lambda cap: cap.module(x),
                   match=r"no step captured \(1 step seen, steps= keeps \[5\]\)")
    q = x.reshape(1, 2, 16, 8)
    one_line_error(cores(m), lambda cap: m.cores[0](q, q, q, 1.0),
                   match=r"cores.0 \(block 0\) ran outside a step: a step is one forward of the "
                         r"TwoCores given, or a `with cap.step\(\):`")
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "block00_step00.h5"), "w").close()
    one_line_error(lambda: tsp.AttentionSetCapture(m, "cores.{b}", d, model="two"),
                   lambda cap: None, match="block00_step00.h5: exists")

    stack = Stack(fault=False)
    one_line_error(lambda: capture_blocks(stack, d, force=True, inputs=lambda a, k: {"x": a[0]}),
                   lambda cap: sample(stack, steps=1),
                   match=r"block 0 of step 0 \(blocks.0\): inputs gave 'x'; expected x, "
                         "modulation, positions")
    one_line_error(lambda: capture_blocks(stack, d, force=True,
                                          inputs=lambda a, k: dict(block_inputs(a, k), x=a[0])),
                   lambda cap: sample(stack, steps=1),
                   match=r"block 0 of step 0 \(blocks.0\): inputs: x \(1, 72, 64\), expected "
                         r"\[S, M\] = \(72, 64\)")
    one_line_error(lambda: tsp.BlockSetCapture(stack, "blocks.{b}.", {"attn.nope": "qkv"}, d,
                                               model="m", config=tiny_config(),
                                               inputs=block_inputs, weights=WEIGHTS),
                   match=r"block 0 \(blocks.0\): no module named 'attn.nope' in the block")


def test_the_docs_example_runs_as_written(tmp_path, monkeypatch, ts):
    with open(os.path.join(os.path.dirname(os.path.dirname(HERE)), "docs", "python.md")) as fh:
        blocks = re.findall(r"```python\n(.*?)```", fh.read(), re.S)
    example = [b for b in blocks if "AttentionSetCapture(" in b]
    assert len(example) == 1, "docs/python.md shows one AttentionSetCapture example"
    monkeypatch.chdir(tmp_path)
    exec(compile(example[0], "docs/python.md", "exec"), {})
    files = set_files(tmp_path / "att-set")
    assert files == [f"block{b:02d}_step{s:02d}.h5" for b in range(4) for s in range(3)]
    ts("fixture", "validate", tmp_path / "att-set" / "block03_step02.h5")
