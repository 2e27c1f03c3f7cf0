"""h5py <-> touchstone, both directions; add_output's safety."""
import os
import re
import threading
import time

import h5py
import numpy as np
import pytest
import torch

import touchstone as tsp
from touchstone import fixture_io, tables
from touchstone.kernels import exact_fp64

CFG = {"hidden": 64, "heads": 2, "head_dim": 32, "ffn_hidden": 128, "grid_t": 2, "grid_h": 4,
       "grid_w": 8, "rope_rot_dims": 24,
       "segments": [{"name": "video", "kind": "video", "start": 0, "length": 64},
                    {"name": "audio", "kind": "cond", "start": 64, "length": 4},
                    {"name": "text", "kind": "cond", "start": 68, "length": 4}]}


def _qkv(S=72, H=2, D=32):
    i = torch.arange(S * H * D, dtype=torch.float32).reshape(S, H, D)
    return ((i % 61) - 30) * 0.125, ((i % 37) - 18) * 0.25, ((i % 11) - 5) * 0.5


def _stats(ts, path, dataset=None):
    """touchstone fixture inspect's figures of one dataset (or {path: figures} of all)."""
    objects = {d["path"]: d for d in ts.json("fixture", "inspect", path)["objects"]}
    return objects[dataset] if dataset else objects


def test_package_fixture_validates_and_touchstone_reads_the_values(ts, tmp_path):
    q, k, v = _qkv()
    path = str(tmp_path / "captured.h5")
    tsp.write_fixture(path, q.to(torch.bfloat16), k.half(), v, CFG, model="py model",
                      block_index=24, step=2, seed=7, resolution=(256, 128), frames=7,
                      positions=np.zeros((72, 3)), compress=True, notes="from python")
    assert sorted(os.listdir(tmp_path)) == ["captured.h5"]  # no temporary, no lock left
    assert ts("fixture", "validate", path).stdout.startswith("ok")
    stats = _stats(ts, path)
    for name, t in (("q", q), ("k", k), ("v", v)):
        s = stats[f"/attention/{name}"]
        assert s["dtype"] == {"q": "bfloat16", "k": "float16", "v": "float32"}[name]
        assert s["min"] == pytest.approx(float(t.min())) and s["max"] == pytest.approx(float(t.max()))
        assert s["mean"] == pytest.approx(float(t.double().mean()), rel=1e-12)


def test_bad_shape_is_refused_and_the_old_file_kept(tmp_path):
    q, k, v = _qkv()
    path = str(tmp_path / "f.h5")
    tsp.write_fixture(path, q, k, v, CFG, model="first")
    before = open(path, "rb").read()
    with pytest.raises(tsp.CaptureError, match=r"/attention/q: shape \(5, 2, 32\)"):
        tsp.write_fixture(path, q[:5], k, v, CFG, model="bad")
    with pytest.raises(tsp.CaptureError, match="video segments hold 64"):
        tsp.write_fixture(path, q, k, v, dict(CFG, grid_t=3), model="bad")
    with pytest.raises(tsp.CaptureError, match="already exists; not replacing it"):
        tsp.write_fixture(path, q, k, v, CFG, model="second")
    # Provenance counts are whole numbers >= 0: -1 frames was written as such.
    for meta, what in (({"frames": -1}, "frames=-1"), ({"block_index": 2.5}, "block_index=2.5"),
                       ({"resolution": (-4, 8)}, "resolution W=-4"), ({"resolution": 5}, "resolution=5")):
        with pytest.raises(tsp.CaptureError, match=re.escape(what)):
            tsp.write_fixture(path, q, k, v, CFG, model="bad", replace=True, **meta)
    assert open(path, "rb").read() == before
    assert sorted(os.listdir(tmp_path)) == ["f.h5"]
    tsp.write_fixture(path, q, k, v, CFG, model="second", replace=True)
    assert tsp.read_fixture(path).attrs["model"] == "second"
    os.mkfifo(str(tmp_path / "fifo"))
    # the C++ writer names what is there (the h5py writer, without the extension, says less)
    with pytest.raises(tsp.CaptureError, match="is a FIFO|not a regular file"):
        tsp.write_fixture(str(tmp_path / "fifo"), q, k, v, CFG, model="m", replace=True)


def test_package_reads_what_touchstone_wrote(ts, tmp_path):
    path = str(tmp_path / "synth.h5")
    ts("fixture", "synth", "--preset", "tiny", "--seed", 4, "--with-block", "-o", path)
    ts("reference", path, "--backend", "exact")
    fx = tsp.read_fixture(path)
    assert fx.attrs["schema"] == tsp.SCHEMA and fx.dtype == "bfloat16"
    assert fx.config["segments"][0]["length"] == 64 and fx.q.shape == (72, 2, 32)
    s = _stats(ts, path, "/attention/q")
    assert fx.q.min() == s["min"] and fx.q.max() == s["max"]
    assert float(fx.q.astype(np.float64).mean()) == pytest.approx(s["mean"], rel=1e-12)
    assert "exact" in fx.outputs and "stages/qkv" in fx.block and "weights/w_qkv" in fx.block
    # touchstone's float64 exact attention against the package's on the values it read
    exact = tsp.read_tensor(path, "/outputs/exact/attention")
    q, k, v = (torch.from_numpy(t.astype(np.float64)) for t in (fx.q, fx.k, fx.v))
    mine = exact_fp64(*(tsp.from_shd(t, "BHSD") for t in (q, k, v)), fx.softmax_scale, torch)
    mine = tsp.to_shd(mine, "BHSD").numpy()
    assert np.linalg.norm(mine - exact) / np.linalg.norm(exact) < 1e-13
    bf = tsp.read_tensor(path, "/attention/q", torch=torch)
    assert bf.dtype == torch.bfloat16 and torch.equal(bf.float(), torch.from_numpy(fx.q))


def test_dimensions_that_overflow_are_refused_by_touchstone(ts, tmp_path):
    q, k, v = _qkv()
    path = str(tmp_path / "huge.h5")
    tsp.write_fixture(path, q, k, v, CFG, model="m")
    with h5py.File(path, "r+") as f:  # HDF5 stores the huge shape without data
        del f["attention/q"]
        f.create_dataset("attention/q", shape=(2**40, 2**40, 32), dtype="f4", chunks=(1, 1, 32))
    r = ts("fixture", "validate", path, expect=2)
    assert "/attention/q: shape [1099511627776, 1099511627776, 32]" in r.stderr
    assert "overflows 64 bits" in r.stderr and r.stderr.count("\n") == 1


def _small(tmp_path, name="f.h5"):
    q, k, v = _qkv()
    path = str(tmp_path / name)
    tsp.write_fixture(path, q.to(torch.bfloat16), k.to(torch.bfloat16), v.to(torch.bfloat16),
                      CFG, model="m")
    return path, (q, k, v)


def test_add_output_stores_the_schema_attributes_and_keeps_other_outputs(ts, tmp_path):
    path, (q, k, v) = _small(tmp_path)
    ts("reference", path, "--backend", "exact")
    out = torch.randn(72, 2, 32)
    tsp.add_output(path, "mine", out, [2.0, 1.0, 3.0], clock="host_steady", params={"a": 1})
    tsp.add_output(path, "other", out.permute(1, 0, 2).unsqueeze(0), layout="BHSD", compress=True)
    # Each output in a file of its own (docs/fixture-format.md), listed by output_files.
    files = fixture_io.output_files(path)
    assert sorted(files) == ["exact", "mine", "other"]
    assert files["mine"] == path + ".outputs/mine.h5"
    with h5py.File(files["mine"], "r") as f, h5py.File(files["other"], "r") as g:
        ds = f["outputs/mine/attention"]
        assert ds.dtype == np.uint16 and ds.attrs["dtype"] == "bfloat16"  # the fixture's type
        assert ds.attrs["backend"] == "mine" and ds.attrs["params"] == '{"a": 1}'
        assert ds.attrs["wall_ms"] == 2.0 and "touchstone_version" in ds.attrs
        t = f["timings/mine"]
        assert t.dtype == np.float64 and list(t[()]) == [2.0, 1.0, 3.0]
        assert t.attrs["clock"] == "host_steady"
        assert "timings" not in g and list(g["outputs"]) == ["other"]
        assert g["outputs/other/attention"].compression == "gzip" and ds.compression is None
        assert np.array_equal(f["outputs/mine/attention"][()], g["outputs/other/attention"][()])
    with h5py.File(path, "r") as f:
        assert "outputs" not in f  # the inputs file is never rewritten
    assert torch.equal(tsp.read_tensor(path, "/outputs/mine/attention", torch=torch),
                       out.to(torch.bfloat16))
    assert ts("fixture", "validate", path).stdout.startswith("ok")
    m = ts.json("compare", path, "mine", "other")["metrics"]
    assert m["identical_fraction"] == 1.0
    # the same name again replaces that output only
    tsp.add_output(path, "mine", out * 2, [5.0], clock="device_events")
    fx = tsp.read_fixture(path)
    assert fx.outputs == ["exact", "mine", "other"]
    assert tsp.read_timings(path, "mine") == (pytest.approx([5.0]), "device_events")
    assert sorted(os.listdir(tmp_path)) == ["f.h5", "f.h5.outputs"]
    assert sorted(os.listdir(path + ".outputs")) == ["exact.h5", "mine.h5", "other.h5"]


@pytest.mark.parametrize("args, match", [
    (dict(timings_ms=[1.0, float("nan")], clock="host_steady"), r"timings_ms\[1\] = nan"),
    (dict(timings_ms=[1.0], clock="wall"), "clock 'wall'"),
    (dict(timings_ms=[1.0]), "clock None"),
    (dict(timings_ms=[], clock="host_steady"), "empty"),
    (dict(clock="host_steady"), "clock given without timings"),
])
def test_add_output_refuses_bad_timings_without_touching_the_file(tmp_path, args, match):
    path, _ = _small(tmp_path)
    before = open(path, "rb").read()
    with pytest.raises(tsp.CaptureError, match=match):
        tsp.add_output(path, "mine", torch.zeros(72, 2, 32), **args)
    assert open(path, "rb").read() == before


def test_add_output_refuses_a_wrong_shape_and_a_bad_name(tmp_path):
    path, _ = _small(tmp_path)
    before = open(path, "rb").read()
    with pytest.raises(tsp.CaptureError, match=r"shape \(72, 2, 16\), expected \(72, 2, 32\)"):
        tsp.add_output(path, "mine", torch.zeros(72, 2, 16))
    with pytest.raises(tsp.CaptureError, match="output name"):
        tsp.add_output(path, "../x", torch.zeros(72, 2, 32))
    with pytest.raises(tsp.CaptureError, match="no such fixture"):
        tsp.add_output(str(tmp_path / "missing.h5"), "mine", torch.zeros(72, 2, 32))
    assert open(path, "rb").read() == before and sorted(os.listdir(tmp_path)) == ["f.h5"]


def test_a_kernel_output_under_the_exact_references_name_is_refused(ts, tmp_path):
    """A gate takes /outputs/exact as the exact reference without being asked: a kernel stored
    under that name would be judged against itself. add_output (and so replay --name) refuses
    the reserved names; a file that holds one anyway is refused where a gate would read it."""
    path, _ = _small(tmp_path)
    for name in ("exact", "exact_cuda", "observed"):
        with pytest.raises(tsp.CaptureError, match=f"output name '{name}' is reserved"):
            tsp.add_output(path, name, torch.zeros(72, 2, 32))
    assert not os.path.exists(path + ".outputs")
    # The float64 reference itself (what a torch run at block24 stores) is what the name means.
    tsp.add_output(path, "exact", torch.zeros(72, 2, 32, dtype=torch.float64),
                   params={"backend": "exact", "precision": "fp64"})
    # An impostor: a zero output renamed into exact's place by hand.
    tsp.add_output(path, "zeros", torch.zeros(72, 2, 32))
    os.replace(path + ".outputs/zeros.h5", path + ".outputs/exact.h5")
    with h5py.File(path + ".outputs/exact.h5", "r+") as f:
        f.move("outputs/zeros", "outputs/exact")
        f.attrs["output"] = "exact"
    r = ts("gate", "--gate", "sage_compat", "-f", path, "--baseline", "sage2", "-c", "sol:tau=1.3", expect=2)
    assert "/outputs/exact/attention is taken as the exact reference" in r.stderr
    assert "touchstone fixture rm-output" in r.stderr


def test_add_output_waits_for_the_writers_lock(tmp_path):
    """Two writers of one fixture: the second waits for the first (the lock file F.lock that
    touchstone's C++ writers take too), so neither loses the other's output."""
    path, _ = _small(tmp_path)
    done = []
    with fixture_io.writer_lock(path):
        assert os.path.exists(path + ".lock")
        th = threading.Thread(target=lambda: done.append(
            tsp.add_output(path, "late", torch.zeros(72, 2, 32)) or True))
        th.start()
        time.sleep(0.5)
        assert not done  # still waiting
        assert not fixture_io.output_files(path)
    th.join(10)
    assert done and tsp.read_fixture(path).outputs == ["late"]
    assert not os.path.exists(path + ".lock")


def test_concurrent_add_outputs_lose_nothing(tmp_path):
    path, _ = _small(tmp_path)
    names = [f"k{i}" for i in range(6)]
    threads = [threading.Thread(target=tsp.add_output, args=(path, n, torch.full((72, 2, 32), i)))
               for i, n in enumerate(names)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert tsp.read_fixture(path).outputs == names


def test_add_output_beside_a_thread_reading_the_fixture_with_h5py(tmp_path, monkeypatch):
    # A data-loader thread holding the fixture open in h5py: the C++ writer's reads must neither
    # stall (a forked child inheriting libhdf5's lock) nor refuse the file (another close
    # degree), and the reader must go on reading.
    monkeypatch.setenv("TOUCHSTONE_READ_STALL_S", "5")
    path, _ = _small(tmp_path)
    stop, reads, errors = threading.Event(), [0], []

    def reader():
        try:
            while not stop.is_set():
                with h5py.File(path, "r") as f:
                    f["attention/q"][()]
                reads[0] += 1
        except Exception as e:  # noqa: BLE001 — reported below
            errors.append(repr(e))
    t = threading.Thread(target=reader)
    t.start()
    try:
        for i in range(6):
            tsp.add_output(path, f"m{i}", torch.full((72, 2, 32), float(i)))
    finally:
        stop.set()
        t.join(30)
    assert not errors and reads[0] > 0
    assert tsp.read_fixture(path).outputs == [f"m{i}" for i in range(6)]


def test_from_npz_writes_an_attention_only_fixture(ts, tmp_path):
    from touchstone import cli

    q, k, v = (t.numpy() for t in _qkv())
    npz = str(tmp_path / "in.npz")
    np.savez(npz, q=q[None], k=k[None], v=v[None])  # BSHD, batch 1
    out = str(tmp_path / "out.h5")
    assert cli.main(["from-npz", npz, "-o", out, "--model", "npz", "--layout", "BSHD"]) == 0
    fx = tsp.read_fixture(out)
    assert fx.config["heads"] == 2 and fx.config["rope_rot_dims"] == 0 and fx.dtype == "float32"
    assert np.array_equal(fx.q, q)
    assert ts("fixture", "validate", out).stdout.startswith("ok")
    assert cli.main(["from-npz", npz, "-o", out, "--model", "npz", "--layout", "BSHD"]) == 2
    assert cli.main(["from-npz", npz, "-o", out, "--model", "again", "--layout", "BSHD",
                     "--force"]) == 0
    np.savez(npz, q=q, k=k)
    assert cli.main(["from-npz", npz, "-o", str(tmp_path / "o2.h5"), "--model", "npz"]) == 2


def test_a_dead_writers_temporary_is_removed(tmp_path, capfd):
    # capfd: the C++ writer (through the extension) says so on file descriptor 2 itself
    import subprocess
    import sys

    path, _ = _small(tmp_path)
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()  # its pid now belongs to no process
    stale, live = tmp_path / f"f.h5.tmp.{p.pid}.0", tmp_path / f"f.h5.tmp.{os.getppid()}.3"
    stale.write_bytes(b"half a fixture")
    live.write_bytes(b"another writer's, still running")
    tsp.add_output(path, "mine", torch.zeros(72, 2, 32))
    assert not stale.exists() and live.exists()
    assert f"left by writer {p.pid} that no longer runs" in capfd.readouterr().err


def test_a_cpp_writer_waits_for_the_python_writers_lock(ts, tmp_path):
    """The two sides share one lock protocol (F.lock). Runs where the built touchstone has the
    C++ writers' lock (it came with `fixture synth --force`)."""
    import subprocess

    if "--force" not in ts("fixture", "synth", "--help").stdout:
        pytest.skip("this touchstone build has no writers' lock yet")
    path, _ = _small(tmp_path)
    with fixture_io.writer_lock(path):
        p = subprocess.Popen([ts.exe, "reference", path, "--backend", "exact"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = p.stderr.readline()  # its first line; EOF ('') if it finished without waiting
        assert f"waiting for another writer of {path} (pid {os.getpid()})" in line
        assert p.poll() is None
    p.communicate(timeout=120)
    assert p.returncode == 0 and tsp.read_fixture(path).outputs == ["exact"]


def test_python_digests_are_the_ones_touchstone_verifies(ts, tmp_path):
    """write_fixture stores each input's digest (hashlib, docs/fixture-format.md "Digests and
    identity"); touchstone accepts them as sealed, with the same identity, across several 4 MiB
    leaves; a flipped bit is refused by both readers, naming the dataset."""
    from touchstone.schema import attention_config
    S, H, D = 8192, 4, 64  # q in float32: 8 MiB, two leaves
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(S, H, D, generator=g) for _ in range(3))
    path = str(tmp_path / "py.h5")
    tsp.write_fixture(path, q, k, v.to(torch.bfloat16), attention_config(S, H, D), model="m")
    info = ts.json("fixture", "validate", path)
    assert info["sealed"] is True and info["unsealed"] == []
    with h5py.File(path, "r") as f:
        digests = {n: f["attention/" + n].attrs["digest"] for n in "qkv"}
        assert fixture_io.tree_digest(f["attention/q"][()]) == digests["q"]
    ins = ts.json("fixture", "inspect", path)
    assert ins["identity"]["sealed"] is True
    read = {d["path"]: d["digest_read"] for d in ins["objects"] if "digest_read" in d}
    assert all(read[f"/attention/{n}"] == digests[n] for n in "qkv")
    assert info["identity"] == ins["identity"]["identity"]
    assert tsp.read_fixture(path).sealed
    # One bit of q on disk.
    needle = q.numpy()[:4].tobytes()[:64]
    blob = bytearray(open(path, "rb").read())
    at = blob.find(needle)
    assert at > 0 and blob.find(needle, at + 1) < 0
    blob[at + 5] ^= 1
    open(path, "wb").write(bytes(blob))
    r = ts("fixture", "validate", path, expect=2)
    assert f"{path}: /attention/q: content does not match its digest" in r.stderr
    with pytest.raises(tsp.CaptureError, match="/attention/q: content does not match its digest"):
        tsp.read_fixture(path)


_WRITE_BOTH_WAYS = r"""
import sys, numpy as np, torch
sys.path.insert(0, sys.argv[1])
import test_fixture_io as t, touchstone as tsp
q, k, v = t._qkv()
path = sys.argv[2]
tsp.write_fixture(path, q.to(torch.bfloat16), k.to(torch.bfloat16), v.to(torch.bfloat16), t.CFG,
                  model="m", notes="n", extra_attrs={"captured_module": "blocks.3"})
tsp.add_output(path, "k1", (q * 0.5).to(torch.bfloat16), timings_ms=[1.5, 1.25], clock="host_steady",
               params={"a": 1}, timing_attrs={"timing_run": "r", "round_order": 2},
               intermediates={"q_int8": (np.arange(72 * 64, dtype=np.int8).reshape(72, 2, 32), None),
                              "q_scale": (np.ones((72, 2), np.float32), None)})
from touchstone import _native
print("extension" if _native.core() is not None else "h5py")
"""


def _tree(path):
    """Every object of a fixture and of its outputs' files: attributes (value, type; creation times
    left out) and values as bytes."""
    out = {}
    files = {"F": path, **{f"F.outputs/{n}.h5": f for n, f in fixture_io.output_files(path).items()}}
    for which, f in files.items():
        with h5py.File(f, "r") as h:
            def visit(name, obj):
                attrs = {k: (v.tolist() if hasattr(v, "tolist") else v, type(v).__name__)
                         for k, v in obj.attrs.items() if k != "created_at"}
                value = (obj.dtype.str, obj[()].tobytes()) if isinstance(obj, h5py.Dataset) else None
                out[f"{which}:/{name}"] = (attrs, value)
            visit("", h)
            h.visititems(visit)
    return out


def test_the_writer_without_the_extension_writes_what_the_extension_writes(tmp_path):
    # The package writes through C++ where the extension is loaded and with h5py elsewhere
    # (TOUCHSTONE_EXTENSION=0): the same objects, attributes with their types, values and digests.
    import subprocess
    import sys

    trees = {}
    for mode in ("1", "0"):
        path = str(tmp_path / f"ext{mode}.h5")
        env = dict(os.environ, TOUCHSTONE_EXTENSION=mode, PYTHONPATH=os.pathsep.join(
            [os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "python")]))
        if mode == "1":
            env.pop("TOUCHSTONE_EXTENSION")
        r = subprocess.run([sys.executable, "-c", _WRITE_BOTH_WAYS, os.path.dirname(__file__), path],
                           env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split()[-1] == ("extension" if mode == "1" else "h5py")
        trees[mode] = _tree(path)
    ext, h5 = trees["1"], trees["0"]
    assert sorted(ext) == sorted(h5)
    for name in ext:
        assert ext[name] == h5[name], name
    assert ext["F.outputs/k1.h5:/outputs/k1/attention"][0]["digest"][0].startswith(tables.DIGEST_SCHEME)
