#!/usr/bin/env python3
"""Generates the malformed-FIXTURE corpus: gen_fixtures.py OUTDIR.

Writes OUTDIR/*.h5 (and directories, FIFOs, symlinks) and OUTDIR/cases.jsonl,
one JSON object per line:
  {"name": str, "argv": ["{touchstone}", ...], "files": [paths that must not change]}
Every case must make touchstone exit 2 with exactly one line on stderr and
leave each listed file byte-identical (tests/corpus/run_corpus.py checks it).
Deterministic: the same OUTDIR content on every run (fixed seeds).
"""
import json
import os
import shutil
import stat
import struct
import sys

import h5py
import numpy as np

# tiny preset geometry (core/block_config.cpp): grid 2x4x8 video + 4 audio + 4 text.
S, H, D, M, F = 72, 2, 32, 64, 128
SEGMENTS = [
    {"name": "video", "kind": "video", "start": 0, "length": 64},
    {"name": "audio", "kind": "cond", "start": 64, "length": 4},
    {"name": "text", "kind": "cond", "start": 68, "length": 4},
]
INPUTS = ["/attention/q", "/attention/k", "/attention/v"]
BLOCK_INPUTS = ["/block/x", "/block/modulation", "/block/positions"] + [
    "/block/weights/" + w
    for w in ["norm1_w", "norm2_w", "w_qkv", "q_norm", "k_norm", "w_out", "w_fc1", "w_fc2"]
]


def vstr(value):
    """A variable-length UTF-8 string attribute, as touchstone writes them."""
    return np.array(value, dtype=h5py.string_dtype("utf-8"))


def bf16(values):
    bits = np.asarray(values, dtype=np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def ramp(shape, scale):
    n = int(np.prod(shape))
    return (scale * ((np.arange(n) % 61) - 30)).reshape(shape).astype(np.float64)


def root_attrs(f):
    a = f.attrs
    a["schema"] = vstr("touchstone.fixture/1")
    a["source"] = vstr("captured")
    a["model"] = vstr("corpus model")
    a["block_index"] = np.int64(3)
    a["step"] = np.int64(2)
    a["seed"] = np.int64(42)
    a["resolution"] = np.array([256, 128], dtype=np.int64)
    a["frames"] = np.int64(7)
    a["created_by"] = vstr("gen_fixtures.py")
    a["created_at"] = vstr("2026-12-01T00:00:00Z")


def config_attrs(g, segments=None):
    a = g.attrs
    for k, v in [("hidden", M), ("heads", H), ("head_dim", D), ("ffn_hidden", F), ("grid_t", 2),
                 ("grid_h", 4), ("grid_w", 8), ("rope_rot_dims", 24), ("rope_freqs_per_axis", 4)]:
        a[k] = np.int64(v)
    a["segments"] = vstr(json.dumps(SEGMENTS if segments is None else segments))
    a["token_order"] = vstr("thw")
    a["qkv_layout"] = vstr("BSHD")
    a["rms_eps"] = np.float64(1e-5)
    a["rope_theta"] = np.float64(10000.0)
    a["softmax_scale"] = np.float64(1.0 / np.sqrt(D))


def put_bf16(f, path, values):
    ds = f.create_dataset(path, data=bf16(values), chunks=True)
    ds.attrs["dtype"] = vstr("bfloat16")
    return ds


def write_base(path, block=False, libver="latest"):
    with h5py.File(path, "w", libver=libver) as f:
        root_attrs(f)
        config_attrs(f.create_group("config"))
        for i, p in enumerate(INPUTS):
            put_bf16(f, p, ramp((S, H, D), 0.125 * (i + 1)))
        if block:
            f.create_dataset("/block/x", data=ramp((S, M), 0.01).astype(np.float32))
            f.create_dataset("/block/modulation", data=ramp((1, 6, M), 0.001).astype(np.float32))
            pos = np.zeros((S, 3))
            pos[:, 0] = np.arange(S) // 32
            f.create_dataset("/block/positions", data=pos)
            shapes = {"norm1_w": (M,), "norm2_w": (M,), "w_qkv": (3 * H * D, M), "q_norm": (D,),
                      "k_norm": (D,), "w_out": (M, H * D), "w_fc1": (2 * F, M), "w_fc2": (M, F)}
            for name, shape in shapes.items():
                f.create_dataset("/block/weights/" + name, data=ramp(shape, 0.002).astype(np.float32))


class Corpus:
    def __init__(self, out):
        self.out = out
        self.cases = []
        os.makedirs(out, exist_ok=True)

    def path(self, name):
        return os.path.join(self.out, name)

    def add(self, name, argv, files):
        self.cases.append({"name": name, "argv": ["{touchstone}"] + argv, "files": files})

    def validate(self, name, path, extra=()):
        self.add(name, ["fixture", "validate", path] + list(extra), [path])

    def all_readers(self, name, path):
        """validate, inspect-free readers and a writer: each must refuse the file."""
        self.validate(name + "/validate", path)
        self.add(name + "/reference", ["reference", path, "--backend", "exact"], [path])

    def finish(self):
        with open(self.path("cases.jsonl"), "w") as f:
            for c in self.cases:
                f.write(json.dumps(c) + "\n")
        return len(self.cases)


def edit(src, dst, fn):
    shutil.copyfile(src, dst)
    with h5py.File(dst, "r+") as f:
        fn(f)


def replace_dataset(f, path, data, attrs=None):
    del f[path]
    ds = f.create_dataset(path, data=data)
    for k, v in (attrs or {}).items():
        ds.attrs[k] = v


def gen(out):
    c = Corpus(out)
    base = c.path("base.h5")
    write_base(base)
    base_block = c.path("base_block.h5")
    write_base(base_block, block=True)
    size = os.path.getsize(base)
    raw = open(base, "rb").read()

    # --- truncations at many offsets (the file ends mid-structure)
    for k, frac in enumerate([0.0, 0.001, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4,
                              0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.99]):
        n = int(size * frac)
        p = c.path("trunc_%02d.h5" % k)
        open(p, "wb").write(raw[:n])
        c.validate("truncated at %d of %d bytes" % (n, size), p)
    for n in (7, 8, 100, size - 1):
        p = c.path("trunc_ref_%d.h5" % n)
        open(p, "wb").write(raw[:n])
        c.add("reference on a file truncated at %d" % n, ["reference", p, "--backend", "exact"], [p])

    # --- byte flips in checksummed metadata (libver latest: every header has a checksum)
    with h5py.File(base, "r") as f:
        addrs = {p: h5py.h5o.get_info(f[p].id).addr for p in ["/", "/config", "/attention"] + INPUTS}
    flips = []
    for obj, addr in sorted(addrs.items()):
        for off in (0, 5, 9, 20):
            flips.append(("object header of %s +%d" % (obj, off), addr + off))
    for off in (0, 9, 12, 20, 40):
        flips.append(("superblock +%d" % off, off))
    for k, (what, at) in enumerate(flips):
        b = bytearray(raw)
        b[at] ^= 0xFF
        p = c.path("flip_%02d.h5" % k)
        open(p, "wb").write(bytes(b))
        c.validate("byte flip in " + what, p)

    # --- the global heap of variable-length strings (no checksum): corrupt
    # object sizes (2^56 bytes) and indices; libhdf5 1.10 may crash here.
    gcol = raw.find(b"GCOL")
    heap = []
    if gcol >= 0:
        at = gcol + 16
        end = gcol + struct.unpack_from("<Q", raw, gcol + 8)[0]
        while at + 16 <= end:
            idx, _ref, _res, osize = struct.unpack_from("<HHIQ", raw, at)
            if idx == 0:
                break
            heap.append((idx, at, osize))
            at += 16 + ((osize + 7) // 8) * 8
    for idx, at, _ in heap[:8]:
        b = bytearray(raw)
        b[at + 15] = 0x01  # size += 2^56
        p = c.path("gheap_size_%d.h5" % idx)
        open(p, "wb").write(bytes(b))
        c.all_readers("global heap object %d size 2^56" % idx, p)
    for idx, at, _ in heap[:2]:
        b = bytearray(raw)
        struct.pack_into("<H", b, at, 0x7FFF)
        p = c.path("gheap_index_%d.h5" % idx)
        open(p, "wb").write(bytes(b))
        c.validate("global heap object %d index unknown" % idx, p)
    if gcol >= 0:
        b = bytearray(raw)
        b[gcol:gcol + 4] = b"XXXX"
        p = c.path("gheap_signature.h5")
        open(p, "wb").write(bytes(b))
        c.all_readers("global heap signature destroyed", p)
        b = bytearray(raw)
        struct.pack_into("<Q", b, gcol + 8, 1 << 56)
        p = c.path("gheap_collection_size.h5")
        open(p, "wb").write(bytes(b))
        c.all_readers("global heap collection size 2^56", p)

    # --- wrong dtypes, shapes, ranks, huge and zero dims, empty datasets
    n = 0

    def variant(name, fn, src=base, readers=False):
        nonlocal n
        n += 1
        p = c.path("v%03d.h5" % n)
        edit(src, p, fn)
        if readers:
            c.all_readers(name, p)
        else:
            c.validate(name, p)

    for q in INPUTS:
        variant(q + " as float32 with shape [S, H, D+1]",
                lambda f, q=q: replace_dataset(f, q, np.zeros((S, H, D + 1), np.float32)), readers=True)
        variant(q + " rank 2", lambda f, q=q: replace_dataset(f, q, np.zeros((S, H * D), np.float32)))
        variant(q + " as strings", lambda f, q=q: replace_dataset(f, q, np.array([b"x"] * 4)))
        variant(q + " uint16 without dtype",
                lambda f, q=q: replace_dataset(f, q, np.zeros((S, H, D), np.uint16)))
        variant(q + " uint32", lambda f, q=q: replace_dataset(f, q, np.zeros((S, H, D), np.uint32)))
        variant(q + " complex", lambda f, q=q: replace_dataset(f, q, np.zeros((S, H, D), np.complex64)))
        variant(q + " bool-like enum",
                lambda f, q=q: replace_dataset(f, q, np.zeros((S, H, D), np.bool_)))
        variant(q + " empty [0, H, D]", lambda f, q=q: replace_dataset(f, q, np.zeros((0, H, D), np.float32)))
        variant(q + " scalar", lambda f, q=q: replace_dataset(f, q, np.float32(1)))
        variant(q + " is a group", lambda f, q=q: (f.__delitem__(q), f.create_group(q)))
        variant(q + " missing", lambda f, q=q: f.__delitem__(q), readers=True)
        variant(q + " NaN", lambda f, q=q: replace_dataset(
            f, q, np.full((S, H, D), np.nan, np.float32)), readers=True)
        variant(q + " +Inf at one element", lambda f, q=q: replace_dataset(
            f, q, np.where(np.arange(S * H * D).reshape(S, H, D) == 777, np.inf, 0.5).astype(np.float32)),
            readers=True)
        variant(q + " dtype attribute bfloat16 on float32", lambda f, q=q: replace_dataset(
            f, q, np.zeros((S, H, D), np.float32), {"dtype": vstr("bfloat16")}))
        variant(q + " dtype attribute is a number",
                lambda f, q=q: f[q].attrs.__setitem__("dtype", np.int64(16)))
        variant(q + " huge declared dims, no data", lambda f, q=q: (
            f.__delitem__(q), f.create_dataset(q, shape=(S, H, 1 << 40), dtype=np.float32, chunks=(1, 1, 1024))),
            readers=True)

    # NaN/Inf in every block input, and in positions of an attention-only file
    for p in BLOCK_INPUTS:
        def poison(f, p=p):
            d = f[p][()]
            d.flat[d.size // 2] = np.nan if "positions" in p else np.inf
            replace_dataset(f, p, d)
        variant(p + " holds NaN/Inf", poison, src=base_block, readers=True)
    variant("attention-only file with NaN in /block/positions", lambda f: f.create_dataset(
        "/block/positions", data=np.full((S, 3), np.nan)), readers=True)
    variant("/block/x with Inf but /block/weights missing", lambda f: f.__delitem__("/block/weights"),
            src=base_block)

    # --- attributes: wrong types, missing, wrong values
    root_bad = [("schema", np.int64(1)), ("schema", vstr("touchstone.fixture/2")),
                ("source", vstr("guessed")), ("block_index", vstr("24")), ("step", np.float64(2.5)),
                ("resolution", np.array([1, 2, 3], np.int64)), ("frames", vstr("")),
                ("created_by", np.int64(0)), ("resolution", vstr("1344x768"))]
    for k, (name, value) in enumerate(root_bad):
        variant("root attribute %s = %r" % (name, value),
                lambda f, name=name, value=value: f.attrs.__setitem__(name, value))
    for name in ["schema", "source", "model", "step", "created_at"]:
        variant("root attribute %s missing" % name, lambda f, name=name: f.attrs.__delitem__(name))
    cfg_bad = [("heads", np.float64(2.5)), ("heads", np.int64(0)), ("heads", np.int64(-2)),
               ("head_dim", np.int64(31)), ("rope_rot_dims", np.int64(33)),
               ("hidden", vstr("64")), ("softmax_scale", vstr("0.1")), ("token_order", vstr("zyx")),
               ("qkv_layout", vstr("BHSD")), ("heads", np.int64(1 << 40)),
               ("rms_eps", np.array([1.0, 2.0]))]
    for name, value in cfg_bad:
        variant("/config %s = %r" % (name, value),
                lambda f, name=name, value=value: f["/config"].attrs.__setitem__(name, value), readers=True)
    variant("/config missing", lambda f: f.__delitem__("/config"))

    # --- broken segments JSON
    seg_bad = ['[', '{"name": "video"}', '[{"name": "v", "kind": "video", "start": 0, "length": 64}]',
               '[{"name": "video", "name": "x", "kind": "video", "start": 0, "length": 64},'
               ' {"name": "audio", "kind": "cond", "start": 64, "length": 4},'
               ' {"name": "text", "kind": "cond", "start": 68, "length": 4}]',
               json.dumps(SEGMENTS[:1] + [dict(SEGMENTS[1], start=60)] + SEGMENTS[2:]),
               json.dumps(SEGMENTS[:1] + [dict(SEGMENTS[1], length=-4)] + SEGMENTS[2:]),
               json.dumps([dict(SEGMENTS[0], kind="pic")] + SEGMENTS[1:]),
               json.dumps([dict(SEGMENTS[0], start="0")] + SEGMENTS[1:]),
               json.dumps([dict(SEGMENTS[0], extra=1)] + SEGMENTS[1:]),
               "[" * 5000 + "]" * 5000, "", "null", '[{"name": "video", "kind": "video", "start": 0, "length": 1e999}]']
    for k, text in enumerate(seg_bad):
        variant("segments JSON %d: %s" % (k, text[:40]),
                lambda f, text=text: f["/config"].attrs.__setitem__("segments", vstr(text)))
    variant("segments with invalid UTF-8", lambda f: f["/config"].attrs.__setitem__(
        "segments", np.void(b'[{"name": "\xff\xfe"}]')))

    # --- outputs and timings
    def add_output(f, name, data, attrs=True):
        ds = f.create_dataset("/outputs/%s/attention" % name, data=data)
        if attrs:
            for k in ["backend", "params", "touchstone_version", "created_at"]:
                ds.attrs[k] = vstr("x")
    variant("output of the wrong shape", lambda f: add_output(f, "bad", np.zeros((S, H, D + 2), np.float32)))
    variant("output without provenance", lambda f: add_output(f, "bare", np.zeros((S, H, D), np.float32), False))
    for k, t in enumerate([[1.0, -2.0, float("nan")], [float("inf")], [-0.5], [], [[1.0, 2.0]]]):
        variant("timings %r" % (t,), lambda f, t=t: f.create_dataset(
            "/timings/exact", data=np.array(t, np.float64).reshape((-1,) if len(np.shape(t)) < 2 else (1, 2))))
    variant("timings with clock 'wall'", lambda f: f.create_dataset(
        "/timings/exact", data=np.array([1.0, 2.0])).attrs.__setitem__("clock", vstr("wall")))
    variant("timings with numeric clock", lambda f: f.create_dataset(
        "/timings/exact", data=np.array([1.0, 2.0])).attrs.__setitem__("clock", np.int64(1)))
    variant("timings as strings", lambda f: f.create_dataset("/timings/exact", data=np.array([b"1"])))

    # --- not HDF5 at all, empty, directories, FIFOs, symlink loops, bad names
    p = c.path("empty.h5")
    open(p, "wb").close()
    c.all_readers("empty file", p)
    p = c.path("text.h5")
    open(p, "w").write("not an hdf5 file\n")
    c.validate("text file", p)
    p = c.path("zeros.h5")
    open(p, "wb").write(b"\0" * 4096)
    c.validate("zeros", p)
    p = c.path("signature_only.h5")
    open(p, "wb").write(raw[:8] + b"\0" * 4096)
    c.validate("HDF5 signature then zeros", p)
    d = c.path("a_directory.h5")
    os.makedirs(d, exist_ok=True)
    c.all_readers("a directory", d)
    fifo = c.path("fifo.h5")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    c.add("FIFO to validate", ["fixture", "validate", fifo], [])
    c.add("FIFO to reference", ["reference", fifo, "--backend", "exact"], [])
    c.add("FIFO to inspect", ["fixture", "inspect", fifo], [])
    for a, b in (("loop_a.h5", "loop_b.h5"),):
        pa, pb = c.path(a), c.path(b)
        for x, y in ((pa, b), (pb, a)):
            if os.path.lexists(x):
                os.remove(x)
            os.symlink(y, x)
        c.all_readers("symlink loop", pa)
    dangling = c.path("dangling.h5")
    if os.path.lexists(dangling):
        os.remove(dangling)
    os.symlink("nowhere.h5", dangling)
    c.validate("dangling symlink", dangling)
    c.validate("missing file", c.path("missing.h5"))
    c.validate("file under a regular file", os.path.join(base, "x.h5"))
    bad_name = os.path.join(os.fsencode(out), b"bad\xff\xfename.h5").decode("utf-8", "surrogateescape")
    c.validate("missing file with invalid UTF-8 in its name", bad_name)
    c.validate("missing file with a newline in its name", c.path("two\nlines.h5"))
    # writers that must refuse and leave the file as it is
    c.add("synth over an existing fixture without --force",
          ["fixture", "synth", "--preset", "tiny", "-o", base], [base])
    c.add("synth onto a FIFO", ["fixture", "synth", "--preset", "tiny", "--force", "-o", fifo], [])
    c.add("synth into a directory", ["fixture", "synth", "--preset", "tiny", "--force", "-o", d], [])
    c.add("rm-output of an absent output", ["fixture", "rm-output", base, "nothing"], [base])
    c.add("rm-output with a slash", ["fixture", "rm-output", base, "../x"], [base])
    return c.finish()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write("usage: gen_fixtures.py OUTDIR\n")
        sys.exit(2)
    n = gen(sys.argv[1])
    print("%d fixture cases in %s" % (n, os.path.join(sys.argv[1], "cases.jsonl")))
