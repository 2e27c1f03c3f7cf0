"""Interleaved replay of several kernels in one timing run, and the real sparse kernels'
adapters (flex_sol, sparge_sol, sparge_topk, sparge_cdf) on their CPU stand-ins: the routing
stored by `reference --store-routing`, its block masks, and the attended pairs against sol's."""
import json
import os
import sys

import h5py
import numpy as np
import pytest
import torch

import touchstone as tsp
from conftest import HERE, python_module
from touchstone import _native, cli, kernels, replay, routing, tables

SPARGE_STAND_IN = os.path.join(HERE, "spargeattn_stand_in")
ROUTING = "sol_tau0.5_bf16_nocomp"
# Video segments whose lengths are no multiple of 64 and conditioning between them: sol's key
# blocks start at each segment's start, so some 64-token grid blocks straddle a boundary.
SEGMENTS = [{"name": "v0", "kind": "video", "length": 150}, {"name": "audio", "kind": "cond", "length": 20},
            {"name": "v1", "kind": "video", "length": 130}, {"name": "text", "kind": "cond", "length": 20}]


@pytest.fixture
def stand_ins(monkeypatch):
    monkeypatch.syspath_prepend(SPARGE_STAND_IN)
    monkeypatch.setenv("TOUCHSTONE_FLEX_STAND_IN", "flex_attention_stand_in")
    sys.modules.pop("spas_sage_attn", None)
    yield
    sys.modules.pop("spas_sage_attn", None)


class _Outputs:
    """/outputs/NAME/... of a fixture, read from each output's own file (docs/fixture-format.md
    "Outputs in files of their own")."""

    def __init__(self, path):
        self.path, self.files = path, []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for f in self.files:
            f.close()

    def __getitem__(self, key):
        f = h5py.File(tsp.fixture_io._route(self.path, "/" + key.strip("/")), "r")
        self.files.append(f)
        return f[key]


def _fixture(path, S=320, H=2, D=64):
    g = torch.Generator().manual_seed(3)
    base = torch.randn(S, H, D, generator=g)  # q and k share structure: routing is not uniform
    q = (base + 0.5 * torch.randn(S, H, D, generator=g)).to(torch.bfloat16)
    k = (base + 0.5 * torch.randn(S, H, D, generator=g)).to(torch.bfloat16)
    v = torch.randn(S, H, D, generator=g).to(torch.bfloat16)
    cfg = tsp.attention_config(S, H, D, segments=SEGMENTS, grid=(1, 1, 280))
    tsp.write_fixture(path, q, k, v, cfg, model="segments", source="synthetic")
    return path


@pytest.fixture
def routed(ts, tmp_path):
    """A fixture with sol's routing at tau 0.5 stored, its compensation-off outputs (bf16 and
    float32) and sol's own dump of the mask."""
    path = _fixture(str(tmp_path / "seg.h5"))
    r = ts.json("reference", path, "--backend", "sol", "--tau", "0.5", "compensation=off",
                "--store-routing")
    assert r["datasets"] == [f"/outputs/{ROUTING}/routing"]
    ts("reference", path, "--backend", "sol", "--tau", "0.5", "compensation=off", "round_out=off",
       "--dump")
    ts("reference", path, "--backend", "sol", "--tau", "0.5")
    return path


def _out(path, name):
    return tsp.read_tensor(path, f"/outputs/{name}/attention").astype(np.float64)


def _rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def test_the_stored_routing_is_sols_mask_with_its_geometry(routed):
    r = routing.read(routed, ROUTING)
    with _Outputs(routed) as f:
        dumped = f[f"outputs/{ROUTING}_f32out/intermediates/route_mask"][()]
        vb = f[f"outputs/{ROUTING}_f32out/intermediates/video_blocks"][()]
    assert np.array_equal(r.mask, dumped) and 0 < r.mask.mean() < 1
    assert np.array_equal(np.stack([r.vb_start, r.vb_length], 1), vb)
    assert (r.block_q, r.block_k, r.tokens) == (128, 64, 320)
    assert list(r.vb_start) == [0, 64, 128, 170, 234, 298]  # cut per segment, last ones short
    assert (r.block_q, r.block_k) == (tables.SOL["block_q"], tables.SOL["block_k"])
    assert r.attrs["format"] == tables.SOL_ROUTING_FORMAT


def test_the_video_blocks_are_cut_by_cpp_with_or_without_their_attributes(routed, monkeypatch):
    """The package never cuts segments into blocks itself: it reads the cut C++ stored beside the
    routing, and for a routing without those attributes (more blocks than an attribute holds)
    asks the extension; without either it says so."""
    r = routing.read(routed, ROUTING)
    if _native.core() is not None:
        again = routing.video_blocks(r.segments, r.block_k, {}, "test")
        assert np.array_equal(again[0], r.vb_start) and np.array_equal(again[1], r.vb_length)
    monkeypatch.setattr(_native, "core", lambda: None)
    with pytest.raises(tsp.CaptureError, match="no extension touchstone._core to cut"):
        routing.video_blocks(r.segments, r.block_k, {}, "test")
    bad = dict(r.attrs, video_block_length=np.asarray(r.vb_length) + 1)
    with pytest.raises(tsp.CaptureError, match="do not tile video segment 'v0'"):
        routing.video_blocks(r.segments, r.block_k, bad, "test")


def test_flex_sol_attends_exactly_sols_pairs_and_matches_sol_without_compensation(routed, stand_ins):
    import flex_attention_stand_in as flex

    r = routing.read(routed, ROUTING)
    bm, counts = kernels.sparse_kernels.flex_block_mask(flex, r, r.block_k, torch, "cpu")
    # sol's pairs built independently from its dump: routed video blocks and all conditioning
    with _Outputs(routed) as f:
        mask = f[f"outputs/{ROUTING}_f32out/intermediates/route_mask"][()]
        vb = f[f"outputs/{ROUTING}_f32out/intermediates/video_blocks"][()]
    want = np.zeros((2, 320, 320), dtype=bool)
    cond = np.ones(320, dtype=bool)
    for j, (s, n) in enumerate(vb):
        cond[s:s + n] = False
    for h in range(2):
        for i in range(3):
            keys = cond.copy()
            for j, (s, n) in enumerate(vb):
                keys[s:s + n] |= bool(mask[h, i, j])
            want[h, i * 128:(i + 1) * 128] = keys
    got = bm.pairs(320)[0].numpy()
    assert np.array_equal(got, want)  # bit for bit: the same attended (query, key) pairs
    assert counts["partial"] > 0 and counts["full"] > 0  # boundaries inside grid blocks
    assert counts["pairs_attended"] == want.sum() == r.pairs_per_head().sum()
    assert np.array_equal(routing.dense_pairs(r, torch).numpy(), want)

    assert cli.main(["replay", routed, "--kernel", f"flex_sol:routing={ROUTING}", "--reps", "2",
                     "--warmup", "0", "--device", "cpu"]) == 0
    flex_out, f32 = _out(routed, f"flex_{ROUTING}"), _out(routed, f"{ROUTING}_f32out")
    # exact over sol's pairs vs sol's float32: only the bf16 rounding of the stored output
    assert _rel(flex_out, f32) < 3e-3
    assert _rel(flex_out, _out(routed, ROUTING)) < 3e-3
    assert _rel(flex_out, _out(routed, "sol_tau0.5_bf16")) > 10 * _rel(flex_out, f32)  # compensated
    with _Outputs(routed) as f:
        p = json.loads(f[f"outputs/flex_{ROUTING}/attention"].attrs["params"])
    assert p["kernel_params"] == {"routing": ROUTING, "kv_block": 0}
    assert p["versions"] == {"flex_attention": "stand-in"}
    assert p["kernel_info"]["pairs_attended"] == counts["pairs_attended"]


@pytest.mark.parametrize("arch, grid", [("", (128, 64)), ("sm90", (64, 128))])
def test_sparge_sol_computes_sols_blocks_plus_the_straddling_ones(routed, stand_ins, monkeypatch,
                                                                  arch, grid):
    monkeypatch.setenv("TOUCHSTONE_STAND_IN_ARCH", arch)
    r = routing.read(routed, ROUTING)
    full, partial, counts = routing.block_states(r, *grid, torch)
    sol = routing.dense_pairs(r, torch)
    gq, gk = grid
    for h in range(2):  # a grid block is computed iff it holds a pair sol attends
        for a in range(full.size(1)):
            for b in range(full.size(2)):
                blk = sol[h, a * gq:(a + 1) * gq, b * gk:(b + 1) * gk]
                assert bool(full[h, a, b]) == bool(blk.all())
                assert bool(partial[h, a, b]) == bool(blk.any() and not blk.all())
    assert counts["partial"] > 0  # blocks computed whole past sol's pairs: counted
    assert cli.main(["replay", routed, "--kernel", f"sparge_sol:routing={ROUTING}", "--reps", "1",
                     "--warmup", "0", "--device", "cpu"]) == 0
    with _Outputs(routed) as f:
        info = json.loads(f[f"outputs/sparge_{ROUTING}/attention"].attrs["params"])["kernel_info"]
    assert info["grid"] == list(grid) and info["partial"] == counts["partial"]
    assert info["pairs_extra"] == info["pairs_in_computed_blocks"] - int(sol.sum()) > 0
    # the stand-in computes exact attention over the computed blocks' pairs
    S = 320
    pairs = (full | partial)[:, torch.arange(S) // gq][:, :, torch.arange(S) // gk]
    q, k, v = (torch.from_numpy(a).double().permute(1, 0, 2) for a in
               (tsp.read_fixture(routed).q, tsp.read_fixture(routed).k, tsp.read_fixture(routed).v))
    s = (q @ k.transpose(-1, -2) * 64 ** -0.5).masked_fill(~pairs, float("-inf"))
    want = (torch.softmax(s, -1) @ v).permute(1, 0, 2).numpy()
    assert _rel(_out(routed, f"sparge_{ROUTING}"), want) < 3e-3


def test_interleaved_replay_shares_one_timing_run(routed, stand_ins):
    specs = ["torch_exact_fp64", f"flex_sol:routing={ROUTING}", "sparge_topk:topk=0.5",
             "sparge_cdf:cdf=0.9,sim=0.5", "user_kernels:attention_fp32"]
    ks = [kernels.resolve(s) for s in specs]
    calls = []
    for kern in ks:  # record the order of calls
        factory = kern._factory

        def wrapped(torch_, ctx, factory=factory, name=kern.name):
            fn = factory(torch_, ctx)

            def call(*a):
                calls.append(name)
                return fn(*a)
            for attr in ("touchstone_info", "touchstone_versions", "touchstone_prepare"):
                if hasattr(fn, attr):
                    setattr(call, attr, getattr(fn, attr))
            return call
        kern._factory = wrapped
    r = replay.replay(routed, ks, reps=3, warmup=1, rotate=2, device="cpu", torch=torch)
    names = [k.name for k in ks]
    assert names == ["torch_exact_fp64", f"flex_{ROUTING}", "sparge_topk0.5",
                     "sparge_cdf0.9_sim0.5", "attention_fp32"]
    # warm-up rounds, timed rounds (forwards, backwards, forwards: a position's advantage falls
    # on every kernel alike), then one call each for the stored output (plus the sparge kernels'
    # own density query through touchstone_info, which calls the module, not `call`)
    assert calls == names + names + names[::-1] + names + names
    assert r["round_order"] == names and len({k["timing_run"] for k in r["kernels"]}) == 1
    for j, name in enumerate(names):
        a = tsp.fixture_io.timing_attrs(routed, name)
        assert a["timing_run"] == r["timing_run"] and a["round_order"] == j
        assert a["device"] == "cpu" and a["clock"] == "host_steady"
        assert len(tsp.read_timings(routed, name)[0]) == 3
    with _Outputs(routed) as f:
        p = json.loads(f["outputs/sparge_topk0.5/attention"].attrs["params"])
    assert p["kernel_params"] == {"topk": 0.5, "pv": 50.0}
    assert p["versions"] == {"spas_sage_attn": "stand-in"}
    assert 0 < p["kernel_info"]["computed_block_density"] <= 1
    assert sorted(p["interleaved_with"]) == sorted(n for n in names if n != "sparge_topk0.5")


def test_the_gate_reads_interleaved_timings(ts, routed, stand_ins):
    assert cli.main(["replay", routed, "--kernel", "torch_exact_fp64", "--kernel",
                     "user_kernels:attention_fp32", "--name", "base", "--name", "mine", "--reps", "5",
                     "--warmup", "1", "--device", "cpu", "--json"]) == 0
    rep = ts.json("gate", "--gate", "sage_compat", "--fixture", routed, "--baseline", "stored:base",
                  "--candidate", "stored:mine", expect=None)
    assert rep["candidates"][0]["candidate"] == "stored:mine"


def test_single_kernel_replay_keeps_its_summary(routed):
    r = replay.replay(routed, kernels.resolve("torch_exact_fp64"), reps=2, warmup=0, device="cpu",
                      torch=torch)
    assert r["name"] == "torch_exact_fp64" and len(r["samples_ms"]) == 2 and "kernels" not in r
    assert tsp.fixture_io.timing_attrs(routed, "torch_exact_fp64")["round_order"] == 0


@pytest.mark.parametrize("args, message", [
    (["--kernel", "sparge_topk:tpk=0.5"], "unknown key 'tpk' (known: topk, pv)"),
    (["--kernel", "sparge_topk:topk=2"], "topk=2.0 must be in (0, 1]"),
    (["--kernel", "sparge_topk:topk=x"], "topk='x' is not float"),
    (["--kernel", "flex_sol"], "needs routing=NAME"),
    (["--kernel", "sdpa:x=1"], "unknown key 'x' (known: none"),
])
def test_bad_kernel_specs_are_bad_input(tmp_path, args, message):
    path = _fixture(str(tmp_path / "f.h5"))
    before = open(path, "rb").read()
    r = python_module("replay", path, *args, "--device", "cpu")
    assert r.returncode == 2 and message in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert open(path, "rb").read() == before


@pytest.mark.parametrize("args, message", [
    (["--kernel", "sdpa", "--kernel", "sdpa"], "output name 'sdpa' twice"),
    (["--kernel", "sdpa", "--kernel", "sdpa_math", "--name", "a"], "1 --name for 2 --kernel"),
])
def test_output_names_of_one_replay_are_distinct(tmp_path, capsys, args, message):
    path = _fixture(str(tmp_path / "f.h5"))
    before = open(path, "rb").read()
    assert cli.main(["replay", path, *args, "--device", "cpu"]) == 2
    assert message in capsys.readouterr().err and open(path, "rb").read() == before


def test_a_missing_routing_lists_the_stored_ones(routed, stand_ins, capsys):
    assert cli.main(["replay", routed, "--kernel", "flex_sol:routing=nope", "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "/outputs/nope/routing: no such routing (stored routings: " + ROUTING in err


def test_flex_needs_torch_2_5_without_a_stand_in(routed, monkeypatch, capsys):
    monkeypatch.delenv("TOUCHSTONE_FLEX_STAND_IN", raising=False)
    monkeypatch.setattr(torch, "__version__", "2.4.1")
    assert cli.main(["replay", routed, "--kernel", f"flex_sol:routing={ROUTING}", "--device",
                     "cpu"]) == 2
    assert "FlexAttention needs torch >= 2.5" in capsys.readouterr().err


def test_store_routing_only_for_sol(ts, tmp_path):
    path = _fixture(str(tmp_path / "f.h5"))
    r = ts("reference", path, "--backend", "exact", "--store-routing", expect=2)
    assert "only the sol family routes" in r.stderr


def test_a_routing_of_another_fixture_is_refused(routed, tmp_path):
    other = str(tmp_path / "other.h5")
    cfg = tsp.attention_config(320, 2, 64)
    x = torch.zeros(320, 2, 64, dtype=torch.bfloat16)
    tsp.write_fixture(other, x, x, x, cfg, model="plain", source="synthetic")
    import shutil  # the routing's own file, beside another fixture (docs/fixture-format.md)
    os.makedirs(tsp.fixture_io.outputs_folder(other), exist_ok=True)
    shutil.copy(tsp.fixture_io.output_files(routed)[ROUTING],
                os.path.join(tsp.fixture_io.outputs_folder(other), ROUTING + ".h5"))
    with pytest.raises(tsp.CaptureError, match="not the fixture's /config segments"):
        routing.read(other, ROUTING)


def test_the_gpu_real_seed_table_script_on_the_cpu_with_stand_ins(ts, tmp_path):
    """benchmarks/gpu-real-seed-table's whole chain (routing, one interleaved timing run, both
    gates, the compensation sweep, the table) with the stand-ins on a small fixture."""
    import subprocess

    root = os.path.dirname(os.path.dirname(HERE))
    fixture = _fixture(str(tmp_path / "in.h5"))
    env = dict(os.environ, DEVICE="cpu", SOL_BACKEND="sol", EXACT="exact", TAUS="0.5", REPS="7",
               WARMUP="1", ROTATE="1", DENSE="torch_exact_fp64 no_such_module:f",
               OWN="sparge_topk:topk=0.5", FIXTURE=fixture, PRESET="segments",
               SAGE_DIR=os.path.join(HERE, "sageattention_stand_in"), SPARGE_DIR=SPARGE_STAND_IN,
               PYTHONPATH=HERE, TOUCHSTONE_FLEX_STAND_IN="flex_attention_stand_in",
               PYTHON=sys.executable, WORK=str(tmp_path / "work"), OMP_NUM_THREADS="2",
               OUT=str(tmp_path / "work"))  # the caller's OUT (set on the GPU machine) is not ours
    r = subprocess.run([os.path.join(root, "benchmarks", "gpu-real-seed-table"), ts.exe],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "no_such_module" in r.stderr  # a bad spec: exit 2, says which
    env["DENSE"] = "torch_exact_fp64"
    r = subprocess.run([os.path.join(root, "benchmarks", "gpu-real-seed-table"), ts.exe],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    out = tmp_path / "work"
    table = json.loads((out / "real_seed_table.json").read_text())
    names = [x["name"] for x in table["rows"]]
    assert names[0] == "sageattn_sm90" and "flex_sol_tau0.5_bf16_nocomp" in names
    assert {"sparge_sol_tau0.5_bf16_nocomp", "sparge_topk0.5", "torch_exact_fp64",
            "sol_tau0.5_bf16_nocomp"} <= set(names)
    rows = {x["name"]: x for x in table["rows"]}
    assert rows["flex_sol_tau0.5_bf16_nocomp"]["rel_l2_vs_sol_nocomp"] < 3e-3
    assert rows["sparge_topk0.5"]["speedup_ci"] is not None
    assert rows["sparge_topk0.5"]["sparse_acceptance"] in ("ACCEPT", "REJECT", "INCONCLUSIVE")
    assert len(table["compensation"]) == 1 and table["compensation"][0]["sparge_partial_blocks"] > 0
    assert table["answer"].startswith(("No row", "Yes:"))
    sol_row = rows["sol_tau0.5_bf16_nocomp"]
    assert sol_row["sparse_acceptance"] == "—" and sol_row["rel_l2_vs_exact"] > 0.05
    c0 = table["compensation"][0]
    assert c0["rel_l2_vs_exact_compensation_on"] < c0["rel_l2_vs_exact_compensation_off"]
    assert c0["rel_l2_vs_exact_compensation_off"] == sol_row["rel_l2_vs_exact"]
    for ext in ("md", "html", "txt"):
        assert table["answer"] in (out / f"real_seed_table.{ext}").read_text()
    assert table["answer"] in r.stdout
