"""What the fixture format (shared spec fixture-schema.md) fixes, in one place for the package:
the schema name, the block's stage names and shapes, the /config attributes."""
import json
import math

SCHEMA = "touchstone.fixture/1"
VERSION = "touchstone-python 0.2.0"

# block.md's stages in block order: the names of /block/stages/<stage> and of
# /outputs/<run>/stages/<stage> (the C++ side's block_stage_names()).
STAGES = ("norm1", "modulate1", "qkv", "q_rope", "k_rope", "attention", "out_proj", "residual1",
          "norm2", "modulate2", "fc1", "swiglu", "fc2", "output")

# Clocks a /timings/<name> array can be on (its `clock` attribute): the gate pairs
# speed only between samples of one clock.
CLOCKS = ("device_events", "host_steady")

CONFIG_REQUIRED = ("hidden", "heads", "head_dim", "ffn_hidden", "grid_t", "grid_h", "grid_w",
                   "segments", "rope_rot_dims")
CONFIG_DEFAULTS = {"token_order": "thw", "rms_eps": 1e-5, "rope_theta": 10000.0,
                   "qkv_layout": "BSHD"}
INT_KEYS = ("hidden", "heads", "head_dim", "ffn_hidden", "grid_t", "grid_h", "grid_w",
            "rope_rot_dims", "rope_freqs_per_axis")


class CaptureError(ValueError):
    """Bad input to the package (shape, dtype, config, file, kernel name): exit code 2."""


def stage_shape(stage, config):
    """Shape of one stage's tensor, tokens first ([S, M], [S, 3, H, D], ...)."""
    S, M, H, D, F = (tokens(config), config["hidden"], config["heads"], config["head_dim"],
                     config["ffn_hidden"])
    shapes = {"qkv": (S, 3, H, D), "q_rope": (S, H, D), "k_rope": (S, H, D),
              "attention": (S, H, D), "fc1": (S, 2 * F), "swiglu": (S, F)}
    if stage not in STAGES:
        raise CaptureError(f"unknown stage {stage!r} (block.md names {', '.join(STAGES)})")
    return shapes.get(stage, (S, M))


def segments_list(config):
    segs = config["segments"]
    return json.loads(segs) if isinstance(segs, str) else segs


def tokens(config):
    return sum(int(s["length"]) for s in segments_list(config))


def attention_config(tokens, heads, head_dim, *, segments=None, grid=None, softmax_scale=None):
    """/config for an attention-only fixture: only the sequence, heads and head_dim are needed.

    segments: the packed sequence's parts, [{"name", "kind": "video"|"cond", "length"}, ...]
    (start optional), default one video segment of all tokens. grid: (t, h, w) of the video
    tokens (default 1 x 1 x video tokens; give it for per-frame breakdowns). The schema's block
    sizes get placeholders an attention run never reads: hidden = ffn_hidden = heads * head_dim,
    rope_rot_dims 0 (q and k are stored after RoPE)."""
    if segments is None:
        segments = [{"name": "video", "kind": "video", "length": int(tokens)}]
    segs, at = [], 0
    for s in segments:
        segs.append({"name": s["name"], "kind": s["kind"], "start": int(s.get("start", at)),
                     "length": int(s["length"])})
        at = segs[-1]["start"] + segs[-1]["length"]
    if at != tokens:
        raise CaptureError(f"segments cover {at} tokens, the tensors hold {tokens}")
    video = sum(s["length"] for s in segs if s["kind"] == "video")
    t, h, w = grid if grid is not None else (1, 1, video)
    if t * h * w != video:
        raise CaptureError(f"grid {t}x{h}x{w} = {t * h * w} tokens, the video segments hold {video}")
    c = {"hidden": heads * head_dim, "heads": heads, "head_dim": head_dim,
         "ffn_hidden": heads * head_dim, "grid_t": t, "grid_h": h, "grid_w": w,
         "segments": segs, "rope_rot_dims": 0}
    if softmax_scale is not None:
        c["softmax_scale"] = float(softmax_scale)
    return full_config(c)


def full_config(config):
    """The /config attributes with defaults filled in and checked as the C++ loader checks them."""
    missing = [k for k in CONFIG_REQUIRED if k not in config]
    if missing:
        raise CaptureError(f"config: missing {', '.join(missing)}")
    c = dict(CONFIG_DEFAULTS)
    c.update(config)
    for key in INT_KEYS:
        if key in c:
            c[key] = int(c[key])
    c.setdefault("rope_freqs_per_axis", c["rope_rot_dims"] // 6)
    c.setdefault("softmax_scale", 1.0 / math.sqrt(c["head_dim"]))
    c["softmax_scale"] = float(c["softmax_scale"])
    c["segments"] = json.dumps([{"name": s["name"], "kind": s["kind"], "start": int(s["start"]),
                                 "length": int(s["length"])} for s in segments_list(c)])
    for key in ("hidden", "heads", "head_dim", "ffn_hidden", "grid_t", "grid_h", "grid_w"):
        if c[key] <= 0:
            raise CaptureError(f"config: {key} must be > 0, got {c[key]}")
    if c["head_dim"] % 2:
        raise CaptureError(f"config: head_dim must be even, got {c['head_dim']}")
    r = c["rope_rot_dims"]
    if r < 0 or r % 6 or r > c["head_dim"] or c["rope_freqs_per_axis"] != r // 6:
        raise CaptureError(f"config: rope_rot_dims ({r}) must be a multiple of 6, <= head_dim, "
                           f"and rope_freqs_per_axis = rope_rot_dims / 6")
    at, video = 0, 0
    for i, seg in enumerate(segments_list(c)):
        if seg["kind"] not in ("video", "cond") or seg["start"] != at or seg["length"] <= 0:
            raise CaptureError(f"config: segments[{i}] {seg}: kind video|cond, starting at {at} "
                               "(no gap, no overlap), length > 0")
        at += seg["length"]
        video += seg["length"] if seg["kind"] == "video" else 0
    if video != c["grid_t"] * c["grid_h"] * c["grid_w"]:
        raise CaptureError(f"config: video segments hold {video} tokens but grid_t*grid_h*grid_w"
                           f" = {c['grid_t'] * c['grid_h'] * c['grid_w']}")
    if not (c["softmax_scale"] > 0 and math.isfinite(c["softmax_scale"])):
        raise CaptureError("config: softmax_scale must be a finite positive number")
    return c
