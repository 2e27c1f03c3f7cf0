"""What the fixture format (docs/fixture-format.md) fixes, for the package: read from
touchstone's C++ tables (tables.py), never kept here. The schema name, the block's stage names
and shapes, the clocks, the /config completion and checks are C++'s; this module resolves them
for a given /config and holds the package's own error type."""
import json

from . import tables

SCHEMA = tables.FIXTURE_SCHEMA
VERSION = f"touchstone-python {tables.VERSION}"

# docs/block.md's stages in block order (core/block_stage_table.cpp).
STAGES = tables.STAGES

# Clocks a /timings/<name> array can be on (its `clock` attribute): the gate pairs
# speed only between samples of one clock.
CLOCKS = tables.CLOCKS

CONFIG_REQUIRED = tables.CONFIG_REQUIRED
INT_KEYS = tables.CONFIG_INT_KEYS


class CaptureError(ValueError):
    """Bad input to the package (shape, dtype, config, file, kernel name): exit code 2."""


class FixtureExists(CaptureError):
    """A fixture is already where one is to be written. `replacer` names what replaces it where
    the user asked: replace=True in Python, --force on the command line."""

    def __init__(self, path, replacer="replace=True"):
        self.path = path
        super().__init__(f"{path}: /: already exists; not replacing it ({replacer} replaces it, "
                         "with every output it holds)")


class NonFiniteInput(CaptureError):
    """A NaN or Inf in an input to be written. `accepter` names what accepts it where the user
    asked: allow_nonfinite=True in Python, --allow-nonfinite on the command line."""

    def __init__(self, path, where, count, first, accepter="allow_nonfinite=True"):
        # Plain integers, as C++ prints the index: numpy 2 spells its own scalars np.int64(3).
        self.path, self.where, self.count = path, where, count
        self.first = [int(i) for i in first]
        at = "[" + ", ".join(str(i) for i in self.first) + "]"
        super().__init__(f"{path}: {where}: {count} NaN/Inf value{'s' if count > 1 else ''} in an "
                         f"input tensor (first at element {at}); pass {accepter} to accept")


def segments_list(config):
    segs = config["segments"]
    return json.loads(segs) if isinstance(segs, str) else segs


def tokens(config):
    return sum(int(s["length"]) for s in segments_list(config))


def stage_shape(stage, config):
    """Shape of one stage's tensor, tokens first ([S, M], [S, 3, H, D], ...)."""
    if stage not in tables.STAGE_DIMS:
        raise CaptureError(f"unknown stage {stage!r} (block.md names {', '.join(STAGES)})")
    S = tokens(config)
    return tuple(factor * (1 if key is None else S if key == "tokens" else int(config[key]))
                 for key, factor in tables.STAGE_DIMS[stage])


def attention_config(tokens, heads, head_dim, *, segments=None, grid=None, softmax_scale=None):
    """/config for an attention-only fixture: only the sequence, heads and head_dim are needed.

    segments: the packed sequence's parts, [{"name", "kind": "video"|"cond", "length"}, ...]
    (start optional), default one video segment of all tokens. grid: (t, h, w) of the video
    tokens (default 1 x 1 x video tokens; give it for per-frame breakdowns). The schema's block
    sizes get placeholders an attention run never reads: hidden = ffn_hidden = heads * head_dim,
    rope_rot_dims 0 (q and k are stored after RoPE). Checked by C++ (full_config)."""
    if segments is None:
        segments = [{"name": "video", "kind": "video", "length": int(tokens)}]
    segs = [dict(s) for s in segments]
    covered = sum(int(s.get("length", 0)) for s in segs)
    if covered != tokens:
        raise CaptureError(f"segments cover {covered} tokens, the tensors hold {tokens}")
    video = sum(int(s.get("length", 0)) for s in segs if s.get("kind") == "video")
    t, h, w = grid if grid is not None else (1, 1, max(video, 1))
    c = {"hidden": heads * head_dim, "heads": heads, "head_dim": head_dim,
         "ffn_hidden": heads * head_dim, "grid_t": t, "grid_h": h, "grid_w": w,
         "segments": segs, "rope_rot_dims": 0}
    if softmax_scale is not None:
        c["softmax_scale"] = float(softmax_scale)
    return full_config(c)


def full_config(config):
    """The /config attributes with defaults filled in and checked, by the C++ loader's own rules
    (core/config_json.cpp, through the extension or `touchstone tables --config`)."""
    return tables.complete_config(config)
