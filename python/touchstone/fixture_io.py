"""The one place the package writes fixtures (docs/fixture-format.md): whole new fixtures
(write_fixture, write_block_fixture) and a kernel's output and timings added to one
(add_output). Inputs live in F, each carrying its content digest (tree_digest, the same as
touchstone's C++ fixtures/digest.hpp); each output lives in a file of its own,
F.outputs/NAME.h5 (output_files lists them), so adding one costs what the output weighs. Every
write goes to a temporary "<file>.tmp.<pid>.<n>" beside its target and is renamed over it
only when complete, under the writers' lock "F.lock" that touchstone's C++ writers take too
(flock; the holder removes the lock file before releasing it), so two writers of one fixture,
C++ or Python, never lose each other's outputs."""
import concurrent.futures
import contextlib
import datetime
import fcntl
import hashlib
import itertools
import json
import os
import shutil
import sys

import h5py
import numpy as np

from . import _native, layouts, storage, tables
from .phases import phase
from .schema import (CLOCKS, INT_KEYS, SCHEMA, VERSION, CaptureError, FixtureExists, NonFiniteInput,
                     full_config, stage_shape, tokens)

_counter = itertools.count()

DIGEST_SCHEME = tables.DIGEST_SCHEME
_LEAF = tables.DIGEST_LEAF_BYTES
OUTPUT_SCHEMA = tables.OUTPUT_SCHEMA
INPUTS_ATTR = tables.INPUTS_IDENTITY_ATTRIBUTE
# Names C++ reads with a meaning of their own (fixtures/fixture.hpp kReservedOutputNames).
_RESERVED = {r["name"]: r["meaning"] for r in tables.FIXTURE_FORMAT["reserved_output_names"]}


def tree_digest(a):
    """The content digest of a stored array (docs/fixture-format.md "Digests and identity"):
    SHA-256 of the concatenated SHA-256s of its little-endian C-order bytes in 4 MiB leaves
    (bfloat16 as its uint16 bits), as "sha256-tree-4MiB:<hex>"."""
    a = np.ascontiguousarray(a)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    mv = memoryview(a.reshape(-1).view(np.uint8)) if a.size else memoryview(b"")
    leaves = [mv[at:at + _LEAF] for at in range(0, len(mv), _LEAF)]
    # hashlib lets go of the GIL while it hashes a large buffer: the leaves of a block24 tensor
    # (130 of them) are hashed on every core, as the C++ readers and writers do.
    workers = min(len(leaves), os.cpu_count() or 1)
    if workers > 1:
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            sums = list(pool.map(lambda m: hashlib.sha256(m).digest(), leaves))
    else:
        sums = [hashlib.sha256(m).digest() for m in leaves]
    return f"{DIGEST_SCHEME}:{hashlib.sha256(b''.join(sums)).hexdigest()}"


def _is_input(path):
    return path in ("/attention/q", "/attention/k", "/attention/v", "/attention/observed") or \
        path.startswith("/block/")


def verify_digest(ds, stored=None):
    """Raises CaptureError when dataset `ds` (an input or an output) does not match its stored
    digest; returns the digest read, or None for a dataset written before digests."""
    tag = ds.attrs.get("digest")
    if tag is None:
        return None
    tag = tag.decode() if isinstance(tag, bytes) else str(tag)
    got = tree_digest(storage.read_stored(ds) if stored is None else stored)
    if got != tag:
        raise CaptureError(f"{ds.file.filename}: {ds.name}: content does not match its digest "
                           f"(stored {tag.split(':')[-1][:12]}..., read {got.split(':')[-1][:12]}"
                           "...): the data changed after the fixture was written (bit rot, a bad "
                           "copy, an edit)")
    return got


def outputs_folder(path):
    """F.outputs: the folder of F's output files."""
    return path + ".outputs"


def output_files(path):
    """{name: file} of every output of fixture `path`: F.outputs/NAME.h5, or `path` itself for
    an output a fixture from before output files holds inside. Each file holds /outputs/NAME and
    /timings/NAME, so with h5py:

        for name, file in output_files("f.h5").items():
            with h5py.File(file, "r") as f:
                out = f[f"outputs/{name}/attention"]
    """
    found = {}
    with contextlib.suppress(OSError):
        with h5py.File(path, "r") as f:
            for top in ("outputs", "timings"):
                for name in (f[top] if top in f else []):
                    found[name] = path
    folder = outputs_folder(path)
    if os.path.isdir(folder):
        for n in sorted(os.listdir(folder)):
            if n.endswith(".h5") and not n.startswith("."):
                found[n[:-3]] = os.path.join(folder, n)
    return dict(sorted(found.items()))


def _route(path, dataset):
    """The file holding `dataset` ("/outputs/NAME/..." or "/timings/NAME" may be in a side file)."""
    parts = dataset.strip("/").split("/")
    if len(parts) >= 2 and parts[0] in ("outputs", "timings"):
        side = os.path.join(outputs_folder(path), parts[1] + ".h5")
        if os.path.exists(side):
            return side
    return path


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _temp_name(path):
    return f"{path}.tmp.{os.getpid()}.{next(_counter)}"


@contextlib.contextmanager
def writer_lock(path):
    """Exclusive lock of one fixture's writers (the C++ side's WriterLock, same file and rules)."""
    lock_path = path + ".lock"
    told = False
    while True:
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise CaptureError(f"{path}: cannot create the writers' lock {lock_path!r} ({e.strerror})")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not told:
                holder = os.pread(fd, 31, 0).decode(errors="replace").strip()
                print(f"touchstone: waiting for another writer of {path}"
                      + (f" (pid {holder})" if holder else "") + " to finish", file=sys.stderr)
                told = True
            fcntl.flock(fd, fcntl.LOCK_EX)
        # A lock on a file no longer at lock_path (its holder removed it) locks nothing.
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(lock_path))
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        remove_stale_temps(path)
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock_path)
        os.close(fd)


def remove_stale_temps(path):
    """Removes "F.tmp.<pid>.<n>" temporaries of writers that no longer run (killed mid-write);
    call with the writers' lock held. Returns how many."""
    folder, base = os.path.split(os.path.abspath(path))
    removed = _remove_stale_in(folder, base + ".tmp.")
    side = outputs_folder(os.path.abspath(path))
    return removed + (_remove_stale_in(side, None) if os.path.isdir(side) else 0)


def _remove_stale_in(folder, prefix):
    removed = 0
    for name in os.listdir(folder):
        if prefix is None:  # any "<name>.tmp.<pid>.<n>" (side files' temporaries)
            at = name.rfind(".tmp.", 0, max(len(name) - 4, 0))
            rest = name[at + 5:].split(".") if at > 0 else []
        else:
            rest = name[len(prefix):].split(".") if name.startswith(prefix) else []
        if len(rest) != 2 or not all(r.isdigit() for r in rest) or int(rest[0]) in (0, os.getpid()):
            continue
        try:
            os.kill(int(rest[0]), 0)
            continue  # still running
        except ProcessLookupError:
            pass
        except OSError:
            continue
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(folder, name))
            removed += 1
            print(f"touchstone: removed {os.path.join(folder, name)}, left by writer {rest[0]} "
                  "that no longer runs", file=sys.stderr)
    return removed


def _commit(tmp, path):
    os.replace(tmp, path)
    with contextlib.suppress(OSError):
        fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY | os.O_DIRECTORY)
        os.fsync(fd)
        os.close(fd)


@contextlib.contextmanager
def _temp_beside(path):
    """Yields a temporary's name; it replaces `path` when the block ends without an error."""
    if os.path.lexists(path) and not os.path.isfile(path):
        raise CaptureError(f"{path}: /: exists and is not a regular file (a folder, a FIFO, a "
                           "device or a broken link is never a fixture)")
    tmp = _temp_name(path)
    try:
        yield tmp
        _commit(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _chunked(a, compress):
    kw = {}
    if a.ndim >= 1 and a.size > 0:
        row = max(1, a.nbytes // max(a.shape[0], 1))
        kw["chunks"] = (max(1, min(a.shape[0], (1 << 20) // row)),) + a.shape[1:]
        if compress:
            kw.update(compression="gzip", compression_opts=4, shuffle=True)
    return kw


def _write(f, path, x, compress=False, bf16_bits=False, attrs=None, stored=None, inputs=None):
    a, name = stored if stored is not None else storage.to_storage(x, bf16_bits)
    with phase(f"write {path}"):
        ds = f.create_dataset(path, data=a, **_chunked(a, compress))
    if name == "bfloat16":
        ds.attrs["dtype"] = "bfloat16"
    for key, value in (attrs or {}).items():
        ds.attrs[key] = value
    # Every input and output carries its content digest; an output also the identity of the
    # inputs it was computed from (docs/fixture-format.md "Digests and identity").
    if _is_input(path) or path.startswith("/outputs/"):
        with phase(f"digest of {path}"):
            ds.attrs["digest"] = tree_digest(a)
    if path.startswith("/outputs/") and inputs:
        ds.attrs[INPUTS_ATTR] = inputs
    return ds


def inputs_identity(f):
    """The identity of the inputs an open fixture holds, from their stored digests (as
    `touchstone fixture validate --json` prints it); None when one has no digest (unsealed)."""
    digests = {}

    def visit(_, obj):
        path = obj.name
        if isinstance(obj, h5py.Dataset) and _is_input(path):
            tag = obj.attrs.get("digest")
            digests[path] = None if tag is None else (tag.decode() if isinstance(tag, bytes) else str(tag))
    for group in ("attention", "block"):
        if group in f:
            f[group].visititems(visit)
    if not digests or any(d is None for d in digests.values()):
        return None
    lines = "".join(f"{p} {d}\n" for p, d in sorted(digests.items()))
    return "sha256:" + hashlib.sha256(lines.encode()).hexdigest()


def _shape_check(name, t, shape):
    if tuple(t.shape) != tuple(shape):
        raise CaptureError(f"{name}: shape {tuple(t.shape)}, expected {tuple(shape)}")


def _check_meta(resolution, **counts):
    """The root's provenance attributes are counts: whole numbers >= 0 (int64), resolution two."""
    def whole(name, x):
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or not 0 <= int(x) < 2 ** 63:
            raise CaptureError(f"{name}={x!r}: expected a whole number from 0 to 2^63 - 1")
    for name, x in counts.items():
        whole(name, x)
    r = list(resolution) if hasattr(resolution, "__len__") else None
    if r is None or len(r) != 2:
        raise CaptureError(f"resolution={resolution!r}: expected two whole numbers (W, H)")
    for name, x in zip(("resolution W", "resolution H"), r):
        whole(name, x)


def _refuse_nonfinite(path, where, a, kind):
    """The C++ reader's rule for inputs (fixtures/validate.cpp), before anything is written: a
    fixture the writer makes must be one validate accepts."""
    if kind == storage.BF16:
        bad = (a & 0x7F80) == 0x7F80  # exponent all ones: Inf or NaN
    elif np.issubdtype(a.dtype, np.floating):
        bad = ~np.isfinite(a)
    else:
        return
    n = int(np.count_nonzero(bad))
    if n:
        first = list(np.unravel_index(int(np.flatnonzero(bad.reshape(-1))[0]), a.shape))
        raise NonFiniteInput(path, where, n, first)


def write_fixture(path, q, k, v, config, *, model, source="captured", block_index=0, step=0,
                  seed=0, resolution=(0, 0), frames=0, notes=None, observed=None,
                  positions=None, block=None, extra_attrs=None, compress=False,
                  bf16_bits=False, layout="SHD", batch=0, replace=False, allow_nonfinite=False):
    """Writes a complete fixture. q, k, v (and observed) in `layout` (default the fixture's
    [S, H, D]; "BSHD" / "BHSD" take sequence `batch` of a batch); config: the /config attributes
    (schema.attention_config() makes an attention-only one); positions: [S, 3] RoPE positions
    (t, h, w), stored as float64 /block/positions; block: further /block datasets by their path
    relative to /block ("x", "weights/w_qkv", "stages/norm1", ...). An existing file at `path`
    is replaced only with replace=True (it would take every output it holds with it). A NaN or
    Inf in q, k, v or observed is refused as `touchstone fixture validate` refuses it, unless
    allow_nonfinite=True (what --allow-nonfinite accepts there); so is an integer q, k, v or
    observed (validate takes float types only)."""
    c = full_config(config)
    S, H, D = tokens(c), c["heads"], c["head_dim"]
    qkv = {"q": q, "k": k, "v": v}
    if observed is not None:
        qkv["observed"] = observed
    for name in qkv:
        qkv[name] = layouts.to_shd(qkv[name], layout, batch, f"/attention/{name}")
        _shape_check(f"/attention/{name}", qkv[name], (S, H, D))
    if source not in ("synthetic", "captured"):
        raise CaptureError("source must be 'synthetic' or 'captured'")
    _check_meta(block_index=block_index, step=step, seed=seed, frames=frames, resolution=resolution)
    stored = {name: storage.to_storage(t, bf16_bits) for name, t in qkv.items()}
    for name, (_, kind) in stored.items():
        # validate's rule for the attention inputs: what this writes must be what it accepts.
        if kind not in tables.FLOAT_DTYPES:
            raise CaptureError(f"/attention/{name}: element type {kind}, expected one of "
                               f"{', '.join(sorted(tables.FLOAT_DTYPES))} (convert it first, e.g. "
                               "x.astype(numpy.float32))")
    if not allow_nonfinite:
        for name, (a, kind) in stored.items():
            _refuse_nonfinite(path, f"/attention/{name}", a, kind)
    extra = {}
    if positions is not None:
        p = positions.detach().cpu().numpy() if hasattr(positions, "detach") else positions
        extra["positions"] = np.asarray(p, dtype=np.float64)
        _shape_check("/block/positions", extra["positions"], (S, 3))
    for rel, t in (block or {}).items():
        if rel.startswith("stages/"):
            _shape_check("/block/" + rel, t, stage_shape(rel[len("stages/"):], c))
        extra[rel] = t
    root = {"source": source, "model": str(model), "block_index": int(block_index), "step": int(step),
            "seed": int(seed), "resolution": [int(r) for r in resolution], "frames": int(frames),
            "created_by": VERSION}
    if notes:
        root["notes"] = str(notes)
    core = _native.core()
    if core is not None:
        return _write_fixture_in_cpp(core, path, root, c, stored, extra, extra_attrs, compress, bf16_bits,
                                     replace)
    with writer_lock(path), _temp_beside(path) as tmp:
        if not replace and os.path.exists(path):  # checked under the lock: one of two racers wins
            raise FixtureExists(path)
        with h5py.File(tmp, "w-") as f:
            root = {"schema": SCHEMA, "source": source, "model": str(model),
                    "block_index": np.int64(block_index), "step": np.int64(step),
                    "seed": np.int64(seed), "resolution": np.asarray(resolution, dtype=np.int64),
                    "frames": np.int64(frames), "created_by": VERSION, "created_at": _now()}
            if notes:
                root["notes"] = str(notes)
            root.update(extra_attrs or {})
            for key, value in root.items():
                f.attrs[key] = value
            g = f.create_group("config")
            for key, value in c.items():
                g.attrs[key] = np.int64(value) if key in INT_KEYS else (
                    np.float64(value) if isinstance(value, float) else value)
            for name, st in stored.items():
                _write(f, "/attention/" + name, None, compress, stored=st)
            for rel, t in extra.items():
                if rel == "modulation_row":
                    t = np.asarray(t.detach().cpu().numpy() if hasattr(t, "detach") else t, np.int32)
                _write(f, "/block/" + rel, t, compress, bf16_bits)
        # The replaced fixture's outputs go before the new inputs appear (never new inputs
        # beside outputs computed from others).
        if os.path.isdir(outputs_folder(path)):
            shutil.rmtree(outputs_folder(path))


def _block_stored(rel, t, bf16_bits):
    if rel == "modulation_row":
        t = np.asarray(t.detach().cpu().numpy() if hasattr(t, "detach") else t, np.int32)
    return storage.to_storage(t, bf16_bits)


def _write_fixture_in_cpp(core, path, root, config, stored, extra, extra_attrs, compress, bf16_bits,
                          replace):
    """write_fixture through touchstone's own writer (fixtures/fixture.hpp write_fixture): the
    same lock, temporary and rename, digests on every core, the file checked against the schema
    before it replaces anything. Root attributes beyond the schema's are stored as text."""
    meta = dict(root, extra={k: v if isinstance(v, str) else json.dumps(_plain(v))
                             for k, v in (extra_attrs or {}).items()})
    writes = [(f"/attention/{name}", lambda a=a: a, kind, "{}") for name, (a, kind) in stored.items()]
    for rel, t in extra.items():
        a, kind = _block_stored(rel, t, bf16_bits)
        writes.append((f"/block/{rel}", lambda a=a: a, kind, "{}"))
    for key, value in [("model", meta["model"]), ("notes", meta.get("notes", ""))] + list(meta["extra"].items()):
        if "\0" in value:
            raise CaptureError(f"{path}: /: attribute {key!r} holds a NUL character (HDF5 text ends there)")
    if not replace and os.path.isfile(path):
        raise FixtureExists(path)
    try:
        core.write_fixture(path, json.dumps(meta), json.dumps(config), writes, compress, replace)
    except core.InputError as e:  # the C++ side's, one line naming file and dataset
        if not replace and os.path.isfile(path) and "already exists" in str(e):
            raise FixtureExists(path) from None  # another process won the race
        raise CaptureError(str(e)) from None


def write_block_fixture(path, config, *, x, modulation, positions, weights, stages,
                        modulation_row=None, **meta):
    """A block fixture as `touchstone reference F --block` reads it: the block's input, its
    modulation table [R, 6, M] (and the row of each token when R > 1), positions [S, 3], the
    weights by block.md name, and the observed stages (stage name -> [S, ...] tensor,
    BlockCapture.stages). /attention/{q, k, v, observed} are the stages q_rope, k_rope, the v
    third of qkv and attention: what the block's attention kernel received and produced."""
    missing = [s for s in ("q_rope", "k_rope", "qkv") if s not in stages]
    if missing:
        raise CaptureError(f"block fixture: stages {', '.join(missing)} are needed for /attention")
    block = {"x": x, "modulation": modulation}
    if modulation_row is not None:
        block["modulation_row"] = modulation_row
    block.update({"weights/" + name: w for name, w in weights.items()})
    block.update({"stages/" + name: t for name, t in stages.items()})
    write_fixture(path, stages["q_rope"], stages["k_rope"], stages["qkv"][:, 2], config,
                  observed=stages.get("attention"), positions=positions, block=block, **meta)


def _fixture_geometry(f, path):
    if f.attrs.get("schema") != SCHEMA:
        raise CaptureError(f"{path}: /: not a {SCHEMA} file (schema attribute "
                           f"{f.attrs.get('schema')!r})")
    if "attention/q" not in f:
        raise CaptureError(f"{path}: /attention/q: missing")
    q = f["attention/q"]
    return tuple(q.shape), storage.storage_dtype(q)


def _check_name(name, params=None):
    ok = name and all(ch.isalnum() or ch in "_-.+" for ch in name) and name not in (".", "..")
    if not ok:
        raise CaptureError(f"output name {name!r}: use letters, digits and _ - . + only")
    if name in _RESERVED:
        # The exact reference's own output may be stored (a float64 torch run at a size the CPU
        # reference would take hours over) when its params say so: the rule gates read it by.
        if isinstance(params, str):
            params = json.loads(params) if params.strip() else {}
        # Either float64 reference under either of their names (they agree to ~1e-15).
        references = [n for n in _RESERVED if n != "observed"]
        is_reference = (name in references and isinstance(params, dict)
                        and params.get("backend") in references and params.get("precision") == "fp64")
        if not is_reference:
            raise CaptureError(f"output name {name!r} is reserved: it is {_RESERVED[name]}; "
                               "store the kernel's output under its own name")


def _timings(timings_ms, clock):
    if clock not in CLOCKS:
        raise CaptureError(f"clock {clock!r}: expected one of {', '.join(CLOCKS)} (the gate "
                           "compares speed only between samples of one clock)")
    t = np.asarray(timings_ms, dtype=np.float64).reshape(-1)
    if t.size == 0:
        raise CaptureError("timings_ms is empty")
    bad = np.flatnonzero(~np.isfinite(t) | (t <= 0))
    if bad.size:
        raise CaptureError(f"timings_ms[{bad[0]}] = {t[bad[0]]}: every sample must be a finite "
                           "positive number of milliseconds")
    return t


def add_output(fixture, name, tensor, timings_ms=None, clock=None, *, params=None,
               layout="SHD", batch=0, intermediates=None, compress=False, timing_attrs=None):
    """Stores a kernel's attention output as /outputs/<name>/attention, in the fixture's storage
    dtype (that of /attention/q), with the schema's attributes (backend, params,
    touchstone_version, created_at, wall_ms = median of the timings), and its timing samples as
    /timings/<name> (float64 ms) with the attribute clock = "device_events" (CUDA events) or
    "host_steady" (a monotonic host clock). Then

        touchstone gate --fixture F --baseline ... --candidate stored:<name>

    judges it. tensor: [S, H, D], or `layout` "BSHD"/"BHSD" (sequence `batch`).
    intermediates: {key: array or (array, dtype attribute)} stored under
    /outputs/<name>/intermediates/ (quantised keys "*_int8"/"*_fp8" name their "*_scale").
    timing_attrs: further attributes of /timings/<name> (timing_run, device, round_order: the
    timing-sample format, docs/python.md "Interleaved replay").
    compress: shuffle + deflate the added datasets (what a fixture committed to a repository
    wants). An earlier output of the same name is replaced; every other dataset is kept."""
    add_outputs(fixture, [dict(name=name, tensor=tensor, timings_ms=timings_ms, clock=clock,
                               params=params, layout=layout, batch=batch,
                               intermediates=intermediates, timing_attrs=timing_attrs)],
                compress=compress)


def add_outputs(fixture, entries, *, compress=False):
    """add_output for several outputs in one write: all are stored or none (the kernels of one
    interleaved timing run, whose samples pair by index). entries: dicts of add_output's
    arguments (name, tensor, timings_ms, clock, params, layout, batch, intermediates,
    timing_attrs); every entry is checked before the fixture is touched."""
    prepared, names = [], set()
    for e in entries:
        name = e["name"]
        _check_name(name, e.get("params"))
        if name in names:
            raise CaptureError(f"output name {name!r} given twice in one write")
        names.add(name)
        clock = e.get("clock")
        t = _timings(e["timings_ms"], clock) if e.get("timings_ms") is not None else None
        if t is None and clock is not None:
            raise CaptureError("clock given without timings_ms")
        out = layouts.to_shd(e["tensor"], e.get("layout", "SHD"), e.get("batch", 0),
                             f"/outputs/{name}/attention")
        params = e.get("params")
        params = params if isinstance(params, str) else json.dumps(params or {})
        prepared.append((name, out, t, clock, params, e.get("intermediates"),
                         e.get("timing_attrs") or {}))
    if not os.path.isfile(fixture):
        raise CaptureError(f"{fixture}: no such fixture file")
    core = _native.core()
    if core is not None:
        return _add_outputs_in_cpp(core, fixture, prepared, compress)
    with writer_lock(fixture):
        try:
            with h5py.File(fixture, "r") as src:
                shape, kind = _fixture_geometry(src, fixture)
                inputs = inputs_identity(src)
        except OSError as e:
            raise CaptureError(f"{fixture}: /: not readable as HDF5 ({e})")
        for name, out, t, clock, params, inter, tattrs in prepared:
            _shape_check(f"{fixture}: /outputs/{name}/attention", out, shape)
        store_as = kind if kind in tables.FLOAT_DTYPES else "float32"
        with h5py.File(fixture, "r") as src:
            legacy = {n for n in names if f"outputs/{n}" in src or f"timings/{n}" in src}
        os.makedirs(outputs_folder(fixture), exist_ok=True)
        # Each output in its own file (an earlier output of a name is replaced with its
        # timings): the cost is that of the outputs alone. Every file is written before any
        # is renamed into place, so an error stores none of them.
        with contextlib.ExitStack() as stack:
            for name, out, t, clock, params, inter, tattrs in prepared:
                tmp = stack.enter_context(_temp_beside(os.path.join(outputs_folder(fixture), name + ".h5")))
                # Converted as written: one output's host copy at a time (a device output's
                # staging memory goes back for the next).
                with phase("host copy"):
                    stored = storage.cast_like(out, store_as)
                with h5py.File(tmp, "w-") as dst:
                    dst.attrs["schema"] = OUTPUT_SCHEMA
                    dst.attrs["output"] = name
                    _write_one(dst, name, stored, t, clock, params, inter, tattrs, compress, inputs)
                del stored
        if legacy:
            # A fixture from before output files holding these names inside: dropped from it,
            # one copy of the fixture (what every write cost before).
            print(f"touchstone: {fixture} holds its outputs inside (a fixture from before side "
                  "files); rewriting it once without " + ", ".join(sorted(legacy)) +
                  " ('touchstone fixture migrate' moves all)", file=sys.stderr)
            skip = {p for n in legacy for p in (f"/outputs/{n}", f"/timings/{n}")}
            with _temp_beside(fixture) as tmp:
                with h5py.File(fixture, "r") as src, h5py.File(tmp, "w-") as dst:
                    _copy_except(src, dst, skip)


def _add_outputs_in_cpp(core, fixture, prepared, compress):
    """add_outputs through touchstone's own writer (fixtures/fixture.hpp append_datasets): its
    writers' lock, side files, all or none, digests and the inputs' identity, each 4 MiB leaf
    hashed and written on every core; each output's host copy is made when it is written.
    A value that fails to convert raises as itself; the writer's own errors are CaptureErrors."""
    try:
        with h5py.File(fixture, "r") as src:
            shape, kind = _fixture_geometry(src, fixture)
    except OSError as e:
        raise CaptureError(f"{fixture}: /: not readable as HDF5 ({e})")
    store_as = kind if kind in tables.FLOAT_DTYPES else "float32"
    writes = []
    for name, out, t, clock, params, inter, tattrs in prepared:
        _shape_check(f"{fixture}: /outputs/{name}/attention", out, shape)
        attrs = json.loads(core.output_attrs_json(name, params, None if t is None else float(np.median(t)),
                                                  json.dumps({"touchstone_version": VERSION})))
        writes.append((f"/outputs/{name}/attention",
                       lambda out=out: storage.cast_like(out, store_as)[0], store_as, json.dumps(attrs)))
        for key, item in (inter or {}).items():
            arr, tag = item if isinstance(item, tuple) else (item, None)
            a, dtype = storage.to_storage(arr, tag == "bfloat16")
            ia = {k: v for k, v in attrs.items() if k != "wall_ms"}
            if key.endswith(("_int8", "_fp8")):
                ia["scale"] = f"/outputs/{name}/intermediates/{key.rsplit('_', 1)[0]}_scale"
                ia["codes"] = "int8" if key.endswith("_int8") else "float8_e4m3fn"
            if tag and tag != "bfloat16":
                ia["dtype"] = tag
            writes.append((f"/outputs/{name}/intermediates/{key}", lambda a=a: a, dtype, json.dumps(ia)))
        if t is not None:
            ta = {"clock": clock}
            ta.update({k: _attr_json(f"{fixture}: /timings/{name}: attribute {k!r}", v)
                       for k, v in tattrs.items()})
            writes.append((f"/timings/{name}", lambda t=t: t, "float64", json.dumps(ta, allow_nan=False)))
    try:
        core.append_datasets(fixture, writes, compress)
    except core.InputError as e:  # the C++ side's, one line naming file and dataset
        raise CaptureError(str(e)) from None


def _attr_json(where, v):
    """An attribute's value as JSON takes it (numpy scalars and arrays as Python numbers and
    lists); CaptureError for what an attribute cannot hold (NaN, Inf, objects)."""
    v = _plain(v)
    try:
        json.dumps(v, allow_nan=False)
    except (TypeError, ValueError):
        raise CaptureError(f"{where}: {v!r} is not a number, a string or a list of them "
                           "(NaN and Inf included)") from None
    return v


def _write_one(dst, name, stored, t, clock, params, intermediates, timing_attrs, compress, inputs):
    attrs = {"backend": name, "params": params, "touchstone_version": VERSION,
             "created_at": _now()}
    if t is not None:
        attrs["wall_ms"] = float(np.median(t))
    _write(dst, f"/outputs/{name}/attention", None, compress, stored=stored, attrs=attrs, inputs=inputs)
    for key, item in (intermediates or {}).items():
        arr, tag = item if isinstance(item, tuple) else (item, None)
        a = dict(attrs)
        a.pop("wall_ms", None)
        if key.endswith(("_int8", "_fp8")):
            a["scale"] = f"/outputs/{name}/intermediates/{key.rsplit('_', 1)[0]}_scale"
            a["codes"] = "int8" if key.endswith("_int8") else "float8_e4m3fn"
        ds = _write(dst, f"/outputs/{name}/intermediates/{key}", arr,
                    compress and np.size(arr) > 1024, tag == "bfloat16", a, inputs=inputs)
        if tag and tag != "bfloat16":
            ds.attrs["dtype"] = tag
    if t is not None:
        ds = dst.create_dataset(f"/timings/{name}", data=t)
        ds.attrs["clock"] = clock
        for key, value in timing_attrs.items():
            ds.attrs[key] = np.int64(value) if isinstance(value, (int, np.integer)) else value


def _copy_except(src, dst, skip):
    """Copies every attribute and object of src into the new file dst, leaving out `skip` paths
    (a fresh file also reclaims the space of what is replaced)."""
    for key, value in src.attrs.items():
        dst.attrs[key] = value

    def walk(group, into):
        for key in group:
            path = f"{group.name.rstrip('/')}/{key}"
            if path in skip:
                continue
            obj = group.get(key, getlink=True)
            if isinstance(obj, (h5py.SoftLink, h5py.ExternalLink)):
                into[key] = obj
                continue
            item = group[key]
            if isinstance(item, h5py.Group) and any(s.startswith(path + "/") for s in skip):
                sub = into.create_group(key)
                for k, v in item.attrs.items():
                    sub.attrs[k] = v
                walk(item, sub)
            else:
                group.copy(item, into, name=key)

    walk(src, dst)


class Fixture:
    """What a fixture holds, read with h5py: root attributes, /config, q, k, v as numpy
    (bfloat16 as exact float32) and the names under /outputs and /timings."""

    def __init__(self, path):
        self.path = path
        try:
            f = h5py.File(path, "r")
        except OSError as e:
            raise CaptureError(f"{path}: /: not readable as HDF5 ({e})")
        with f:
            _fixture_geometry(f, path)
            self.attrs = {k: _plain(v) for k, v in f.attrs.items()}
            self.config = {k: _plain(v) for k, v in f["config"].attrs.items()}
            self.config["segments"] = json.loads(self.config["segments"])
            self.dtype = storage.storage_dtype(f["attention/q"])
            arrays = {}
            self.sealed = True
            for n in "qkv":
                ds = f["attention/" + n]
                raw = storage.read_stored(ds)
                self.sealed = verify_digest(ds, raw) is not None and self.sealed
                arrays[n] = storage.stored_to_array(ds, raw)
            self.q, self.k, self.v = arrays["q"], arrays["k"], arrays["v"]
            self.block = sorted(_datasets(f["block"])) if "block" in f else []
        self.outputs, self.timings = [], []
        for name, file in output_files(path).items():
            with h5py.File(file, "r") as g:
                if f"outputs/{name}" in g:
                    self.outputs.append(name)
                if f"timings/{name}" in g:
                    self.timings.append(name)

    @property
    def softmax_scale(self):
        return float(self.config.get("softmax_scale", self.config["head_dim"] ** -0.5))


def _datasets(group):
    names = []
    group.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
    return names


def _plain(v):
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, np.ndarray):
        return v.tolist()
    return v.item() if isinstance(v, np.generic) else v


def read_fixture(path):
    return Fixture(path)


def read_tensor(path, dataset, torch=None):
    """One dataset (e.g. "/outputs/exact/attention", "/block/stages/qkv"): numpy (bfloat16 as
    float32), or a torch tensor in its storage type when the torch module is passed."""
    with h5py.File(_route(path, dataset), "r") as f:
        if dataset not in f or not isinstance(f[dataset], h5py.Dataset):
            raise CaptureError(f"{path}: {dataset}: no such dataset")
        ds = f[dataset]
        logical = "/" + dataset.strip("/")
        raw = storage.read_stored(ds)  # read once: the digest and the values from the same bytes
        if _is_input(logical) or logical.startswith("/outputs/"):
            verify_digest(ds, raw)
        if logical.startswith("/outputs/") and INPUTS_ATTR in ds.attrs:
            recorded = _plain(ds.attrs[INPUTS_ATTR])
            with h5py.File(path, "r") as main:
                mine = inputs_identity(main)
            if mine is not None and recorded != mine:
                raise CaptureError(f"{path}: {logical}: computed from other inputs (identity "
                                   f"{recorded[:19]}..., this fixture's is {mine[:19]}...): copied "
                                   "from another fixture? Compute it again, or remove it with "
                                   "'touchstone fixture rm-output'")
        return storage.to_torch(ds, torch, raw) if torch else storage.stored_to_array(ds, raw)


def read_timings(path, name):
    """(samples in ms, clock or None) of /timings/<name> (timing_attrs() has the rest)."""
    with h5py.File(_route(path, f"/timings/{name}"), "r") as f:
        ds = f.get(f"timings/{name}")
        if ds is None:
            raise CaptureError(f"{path}: /timings/{name}: no such dataset")
        return ds[()], _plain(ds.attrs["clock"]) if "clock" in ds.attrs else None


def timing_attrs(path, name):
    """Every attribute of /timings/<name> (clock, timing_run, device, round_order, ...)."""
    with h5py.File(_route(path, f"/timings/{name}"), "r") as f:
        ds = f.get(f"timings/{name}")
        if ds is None:
            raise CaptureError(f"{path}: /timings/{name}: no such dataset")
        return {k: _plain(v) for k, v in ds.attrs.items()}
