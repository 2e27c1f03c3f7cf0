"""The layouts models hand q, k, v (and attention outputs) around in, and the fixture's one."""
from .schema import CaptureError

# name: what the axes are. "SHD" is the fixture's own [S, H, D] (no batch axis).
LAYOUTS = {"BSHD": "[batch, tokens, heads, head_dim]", "BHSD": "[batch, heads, tokens, head_dim]",
           "SHD": "[tokens, heads, head_dim]"}


def check_layout(layout):
    if layout not in LAYOUTS:
        raise CaptureError(f"unknown layout {layout!r} (expected {', '.join(LAYOUTS)})")
    return layout


def to_shd(t, layout, batch=0, what="tensor"):
    """A [B, S, H, D] / [B, H, S, D] / [S, H, D] tensor (torch or numpy) as [S, H, D]: one
    sequence of the batch. numpy in, numpy out; torch in, torch out (a view where possible)."""
    check_layout(layout)
    rank = 3 if layout == "SHD" else 4
    if len(t.shape) != rank:
        raise CaptureError(f"{what}: shape {tuple(t.shape)} is not {layout} {LAYOUTS[layout]}")
    if layout == "SHD":
        return t
    if not 0 <= batch < t.shape[0]:
        raise CaptureError(f"{what}: batch index {batch} outside [0, {t.shape[0]})")
    one = t[batch]
    if layout == "BSHD":
        return one
    return one.permute(1, 0, 2) if hasattr(one, "permute") else one.transpose(1, 0, 2)


def from_shd(t, layout):
    """[S, H, D] -> layout with a batch of one (views)."""
    check_layout(layout)
    if layout == "SHD":
        return t
    if layout == "BSHD":
        return t.unsqueeze(0)
    return t.permute(1, 0, 2).unsqueeze(0)
