"""sol's routing decisions as `touchstone reference F --backend sol ... --store-routing` stores
them (/outputs/<name>/routing, docs/fixture-format.md), and their translation into the block
grids of real sparse kernels (FlexAttention's BlockMask, SpargeAttn's mask_id).

sol's geometry: query blocks of block_q tokens from token 0 over the packed sequence; video key
blocks as C++ cut them (stored beside the routing, or through the extension for a routing of more
blocks than attributes hold); conditioning tokens are attended by every query. routing[h, i, j] = 1: query block i of head h attends video
block j. A kernel's grid is (gq, gk) blocks from token 0; a grid block is "full" when every one
of its (query, key) pairs is one sol attends, "partial" when some are, "empty" when none are.
"""
import contextlib
import json

import h5py
import numpy as np

from . import _native, fixture_io, tables
from .schema import CaptureError

FORMAT = tables.SOL_ROUTING_FORMAT


class Routing:
    """One stored routing: mask uint8 [H, QB, VB], block_q, block_k, tokens S, the segments
    (dicts name, kind, start, length) and the video blocks' starts and lengths (int64 [VB])."""

    def __init__(self, name, mask, block_q, block_k, segments, attrs, vb_start, vb_length):
        self.name, self.mask, self.block_q, self.block_k = name, mask, block_q, block_k
        self.segments, self.attrs = segments, attrs
        self.heads, self.query_blocks, self.video_blocks = mask.shape
        self.tokens = sum(s["length"] for s in segments)
        self.vb_start, self.vb_length = vb_start, vb_length

    def token_video_block(self):
        """int64 [S]: each key token's video block, or VB (one past the last) for conditioning."""
        out = np.full(self.tokens, self.video_blocks, dtype=np.int64)
        for j, (s, n) in enumerate(zip(self.vb_start, self.vb_length)):
            out[s:s + n] = j
        return out

    def pairs_per_head(self):
        """Attended (query, key) pairs per head (int64 [H]): what sol with compensation off
        computes."""
        n_cond = self.tokens - int(self.vb_length.sum())
        qlen = np.minimum(self.block_q, self.tokens - np.arange(self.query_blocks) * self.block_q)
        keys = self.mask.astype(np.int64) @ self.vb_length.astype(np.int64) + n_cond  # [H, QB]
        return (keys * qlen[None, :]).sum(axis=1)


def video_blocks(segments, block_k, attrs=None, where="routing"):
    """(starts, lengths) int64 of sol's video key blocks as C++ cuts them
    (reference/attention_sol.hpp sol_key_blocks): the routing's own attributes
    video_block_start / video_block_length where it has them (C++ stores them for up to
    tables.SOL["routing_attr_max_video_blocks"] blocks), else the extension's cut. Checked to
    tile the video segments in blocks of at most block_k tokens; CaptureError otherwise."""
    attrs = attrs or {}
    if "video_block_start" in attrs and "video_block_length" in attrs:
        starts = np.asarray(attrs["video_block_start"], dtype=np.int64).reshape(-1)
        lengths = np.asarray(attrs["video_block_length"], dtype=np.int64).reshape(-1)
    else:
        core = _native.core()
        if core is None:
            raise CaptureError(f"{where}: no video_block_start / video_block_length attributes "
                               f"(a routing of more than {tables.SOL['routing_attr_max_video_blocks']}"
                               " video blocks) and no extension touchstone._core to cut the "
                               f"segments into sol's blocks ({_native.why_not()})")
        cut = core.sol_video_blocks(json.dumps(segments), int(block_k))
        starts = np.asarray([s for s, _ in cut], dtype=np.int64)
        lengths = np.asarray([n for _, n in cut], dtype=np.int64)
    # Each video segment covered from its start to its end, in order, by blocks of 1..block_k.
    at = 0
    for s in segments:
        if s["kind"] != "video":
            continue
        t = s["start"]
        while t < s["start"] + s["length"]:
            if (at >= len(starts) or starts[at] != t or not 1 <= lengths[at] <= block_k
                    or t + lengths[at] > s["start"] + s["length"]):
                raise CaptureError(f"{where}: its video blocks do not tile video segment "
                                   f"{s.get('name', '?')!r} in blocks of at most "
                                   f"block_k={block_k} tokens")
            t += int(lengths[at])
            at += 1
    if at != len(starts) or len(starts) != len(lengths):
        raise CaptureError(f"{where}: {len(starts)} video blocks stored, the video segments hold {at}")
    return starts, lengths


def _text(v):
    return v.decode() if isinstance(v, bytes) else v


def stored_routings(path):
    """Names of the outputs of fixture `path` that hold a routing dataset."""
    names = []
    for name, file in fixture_io.output_files(path).items():
        with contextlib.suppress(OSError), h5py.File(file, "r") as f:
            if f"outputs/{name}/routing" in f:
                names.append(name)
    return sorted(names)


def read(path, name):
    """The routing stored as /outputs/<name>/routing of fixture `path` (in the output's own file,
    docs/fixture-format.md), checked against the fixture's /config (tokens, heads, segments).
    CaptureError naming what is wrong."""
    where = f"{path}: /outputs/{name}/routing"
    try:
        with h5py.File(path, "r") as f:
            config_segments = json.loads(_text(f["config"].attrs["segments"]))
            heads = int(f["config"].attrs["heads"])
        f = h5py.File(fixture_io._route(path, f"/outputs/{name}/routing"), "r")
    except OSError as e:
        raise CaptureError(f"{path}: /: not readable as HDF5 ({e})")
    with f:
        if f"outputs/{name}/routing" not in f:
            have = stored_routings(path)
            raise CaptureError(f"{where}: no such routing (stored routings: "
                               f"{', '.join(have) if have else 'none'}; `touchstone reference F "
                               "--backend sol ... --store-routing` stores one)")
        ds = f[f"outputs/{name}/routing"]
        attrs = {k: _text(v) for k, v in ds.attrs.items()}
        if attrs.get("format") != FORMAT:
            raise CaptureError(f"{where}: attribute format is {attrs.get('format')!r}, "
                               f"expected {FORMAT!r}")
        if ds.dtype != np.uint8 or ds.ndim != 3:
            raise CaptureError(f"{where}: {ds.dtype} {ds.shape}, expected uint8 [H, QB, VB]")
        mask = ds[()]
    try:
        segments = json.loads(attrs["segments"])
        block_q, block_k = int(attrs["block_q"]), int(attrs["block_k"])
    except (KeyError, ValueError, TypeError) as e:
        raise CaptureError(f"{where}: attributes segments, block_q, block_k unreadable ({e})")
    strip = [{k: s[k] for k in ("kind", "start", "length")} for s in segments]
    if strip != [{k: s[k] for k in ("kind", "start", "length")} for s in config_segments]:
        raise CaptureError(f"{where}: its segments are not the fixture's /config segments")
    vb_start, vb_length = video_blocks(segments, block_k, attrs, where)
    r = Routing(name, mask, block_q, block_k, segments, attrs, vb_start, vb_length)
    qb = -(-r.tokens // block_q)
    if mask.shape != (heads, qb, len(r.vb_start)):
        raise CaptureError(f"{where}: shape {mask.shape}, expected [{heads}, {qb}, "
                           f"{len(r.vb_start)}] (heads, ceil(S/block_q), video blocks)")
    if mask.max(initial=0) > 1:
        raise CaptureError(f"{where}: values other than 0 and 1")
    return r


def _overlap(starts_a, len_a, starts_b, len_b):
    """[A, B] float64: tokens shared by intervals a and b."""
    lo = np.maximum(starts_a[:, None], starts_b[None, :])
    hi = np.minimum((starts_a + len_a)[:, None], (starts_b + len_b)[None, :])
    return np.maximum(hi - lo, 0).astype(np.float64)


def _grid(S, g):
    n = -(-S // g)
    starts = np.arange(n, dtype=np.int64) * g
    return starts, np.minimum(g, S - starts)


def grid_pairs(routing, gq, gk, torch, device="cpu"):
    """(attended, area): float64 torch tensors [H, ceil(S/gq), ceil(S/gk)] and [.., ..]: how
    many (query, key) pairs of each grid block sol attends, and how many the block holds.
    Exact integer counts (float64 matmuls of integers far below 2^53)."""
    S = routing.tokens
    ks, kl = _grid(S, gk)
    qs, ql = _grid(S, gq)
    key_video = _overlap(routing.vb_start, routing.vb_length, ks, kl)  # [VB, KB]
    cond = kl - key_video.sum(axis=0)  # conditioning keys of each grid key block
    sol_qs, sol_ql = _grid(S, routing.block_q)
    q_over = _overlap(qs, ql, sol_qs, sol_ql)  # [QBg, QB]
    R = torch.from_numpy(routing.mask).to(device=device, dtype=torch.float64)
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a)).to(device=device, dtype=torch.float64)
    keys = torch.matmul(R, t(key_video)) + t(cond)[None, None, :]  # [H, QB, KB] keys attended
    attended = torch.matmul(t(q_over)[None], keys)  # [H, QBg, KB]
    area = t(np.outer(ql, kl))
    return attended, area


def block_states(routing, gq, gk, torch, device="cpu"):
    """(full, partial) bool [H, QBg, KBg] and counts {blocks, full, partial, pairs_attended,
    pairs_computed_whole} of sol's routing on a (gq, gk) grid from token 0."""
    attended, area = grid_pairs(routing, gq, gk, torch, device)
    full = attended == area[None]
    partial = (attended > 0) & ~full
    computed = full | partial
    counts = {"grid": [gq, gk], "grid_blocks": int(computed.numel()),
              "full": int(full.sum().item()), "partial": int(partial.sum().item()),
              "pairs_attended": int(attended.sum().item()),
              "pairs_in_computed_blocks": int((area[None] * computed).sum().item())}
    counts["computed_block_density"] = (counts["full"] + counts["partial"]) / counts["grid_blocks"]
    counts["pair_density"] = counts["pairs_attended"] / (routing.heads * routing.tokens ** 2)
    counts["computed_pair_density"] = counts["pairs_in_computed_blocks"] / (routing.heads * routing.tokens ** 2)
    return full, partial, counts


def dense_pairs(routing, torch):
    """bool [H, S, S]: the (query, key) pairs sol attends with compensation off (tests only:
    S*S*H booleans)."""
    S, bq = routing.tokens, routing.block_q
    vb = torch.from_numpy(routing.token_video_block())
    R = torch.cat([torch.from_numpy(routing.mask).bool(),
                   torch.ones(routing.heads, routing.query_blocks, 1, dtype=torch.bool)], dim=2)
    qb = torch.arange(S) // bq
    return R[:, qb][:, :, vb]
