"""Real block-sparse attention kernels for replay: SpargeAttn (spas_sage_attn: its own block
selection, and its mask entry executing sol's routing) and PyTorch FlexAttention with a BlockMask
built from sol's routing. Each factory returns f(q, k, v, scale) on [1, H, S, D] views, with
`touchstone_info`: a callable (q, k, v, scale) -> dict stored in the output's params (density,
block counts), called once after timing.

Where the real modules are missing: FlexAttention needs torch >= 2.5; the environment variable
TOUCHSTONE_FLEX_STAND_IN names a module with flex_attention's interface to use instead (the
tests' CPU stand-in, tests/python/flex_attention_stand_in). spas_sage_attn is imported as is
(the tests put a stand-in of that name on sys.path)."""
import importlib
import inspect
import os

from . import routing as routing_mod
from .schema import CaptureError

_COMPILED = {}  # flex module -> torch.compile'd flex_attention: compiled once, reused per shape


def _version_of(module):
    v = getattr(module, "__version__", None)
    if v:
        return str(v)
    try:
        from importlib import metadata
        return metadata.version(module.__name__.split(".")[0])
    except Exception:  # noqa: BLE001 — an in-place build has no metadata
        return f"unversioned ({os.path.dirname(getattr(module, '__file__', '') or '?')})"


def _torch_at_least(torch, major, minor):
    try:
        return tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2]) >= (major, minor)
    except ValueError:
        return False


# ---- SpargeAttn -------------------------------------------------------------------------------

def _sparge():
    try:
        import spas_sage_attn
    except ImportError as e:
        raise CaptureError(f"SpargeAttn is not importable ({e}): build it as "
                           "../shared/device/spargeattn/build.sh says and put it on PYTHONPATH")
    return spas_sage_attn


def sparge_geometry(mod, q, torch):
    """(queries, keys) of one block of SpargeAttn's mask on q's device: the sm90 kernel's CTA is
    64 queries x 128 keys (csrc/qattn/qk_int_sv_f8_cuda_sm90.cu), every other path 128 x 64
    (what its README states)."""
    if getattr(mod, "__touchstone_stand_in__", False):
        return mod.block_geometry()
    if not q.is_cuda:
        raise CaptureError("SpargeAttn runs on a CUDA device only (--device cuda)")
    return (64, 128) if torch.cuda.get_device_capability(q.device) == (9, 0) else (128, 64)


def sparge_own(selection, p, torch, ctx):
    """sparge_topk / sparge_cdf: SpargeAttn's own block selection."""
    mod = _sparge()
    if selection == "topk":
        fn = lambda q, k, v, s: mod.spas_sage2_attn_meansim_topk_cuda(
            q, k, v, topk=p["topk"], pvthreshd=p["pv"], is_causal=False, scale=s,
            tensor_layout="HND")

        def info(q, k, v, s):
            _, sparsity = mod.spas_sage2_attn_meansim_topk_cuda(
                q, k, v, topk=p["topk"], pvthreshd=p["pv"], is_causal=False, scale=s,
                tensor_layout="HND", return_sparsity=True)
            return {"computed_block_density": 1.0 - float(sparsity),
                    "grid": list(sparge_geometry(mod, q, torch))}
    else:
        kw = dict(cdfthreshd=p["cdf"], simthreshd1=p["sim"], pvthreshd=p["pv"])
        fn = lambda q, k, v, s: mod.spas_sage2_attn_meansim_cuda(
            q, k, v, is_causal=False, scale=s, tensor_layout="HND", **kw)

        def info(q, k, v, s):
            _, sparsity = mod.spas_sage2_attn_meansim_cuda(
                q, k, v, is_causal=False, scale=s, tensor_layout="HND", return_sparsity=True, **kw)
            return {"computed_block_density": 1.0 - float(sparsity),
                    "grid": list(sparge_geometry(mod, q, torch))}
    fn.touchstone_info = info
    fn.touchstone_versions = {"spas_sage_attn": _version_of(mod)}
    return fn


def sparge_sol(p, torch, ctx):
    """sparge_sol: SpargeAttn's mask entry executing sol's stored routing. Its grid starts at
    token 0, so a grid block holding any pair sol attends is computed whole (counted)."""
    mod = _sparge()
    r = routing_mod.read(ctx["fixture"], p["routing"])
    state = {}

    def mask_for(q):
        if "mask" not in state:
            gq, gk = sparge_geometry(mod, q, torch)
            full, partial, counts = routing_mod.block_states(r, gq, gk, torch, q.device)
            state["mask"] = (full | partial).unsqueeze(0).contiguous()
            state["counts"] = counts
        return state["mask"]

    def fn(q, k, v, s):
        return mod.block_sparse_sage2_attn_cuda(q, k, v, mask_id=mask_for(q), scale=s,
                                                pvthreshd=p["pv"], tensor_layout="HND")

    fn.touchstone_info = lambda q, k, v, s: dict(state["counts"], routing=r.name,
                                                 routing_grid=[r.block_q, r.block_k],
                                                 pairs_extra=state["counts"]["pairs_in_computed_blocks"]
                                                 - state["counts"]["pairs_attended"])
    fn.touchstone_versions = {"spas_sage_attn": _version_of(mod)}
    fn.touchstone_prepare = mask_for  # built before timing, not inside a timed call
    return fn


# ---- FlexAttention ----------------------------------------------------------------------------

def _flex(torch):
    stand_in = os.environ.get("TOUCHSTONE_FLEX_STAND_IN")
    if stand_in:
        return importlib.import_module(stand_in)
    if not _torch_at_least(torch, 2, 5):
        raise CaptureError(f"flex_sol: FlexAttention needs torch >= 2.5 "
                           f"(torch.nn.attention.flex_attention; this is {torch.__version__})")
    try:
        return importlib.import_module("torch.nn.attention.flex_attention")
    except ImportError as e:
        raise CaptureError(f"flex_sol: torch {torch.__version__} has no FlexAttention ({e})")


def flex_block_mask(flex, r, kv_block, torch, device):
    """A BlockMask with sol's exact pairs: query blocks of sol's block_q, key blocks of kv_block
    tokens from token 0; full blocks without a mask_mod, partial ones (a segment boundary or a
    short video block inside) through a mask_mod that looks the pair up in the routing."""
    full, partial, counts = routing_mod.block_states(r, r.block_q, kv_block, torch, device)

    def listed(m):
        num = m.sum(dim=-1).to(torch.int32)
        idx = torch.sort((~m).to(torch.int8), dim=-1, stable=True).indices.to(torch.int32)
        return num.unsqueeze(0).contiguous(), idx.unsqueeze(0).contiguous()

    kv_num, kv_idx = listed(partial)
    full_num, full_idx = listed(full)
    S = r.tokens
    padded = (-(-S // kv_block) + 1) * kv_block  # flex may ask for keys past S in the last block
    vb = torch.full((padded,), r.video_blocks, dtype=torch.int64)
    vb[:S] = torch.from_numpy(r.token_video_block())
    vb = vb.to(device)
    routed = torch.cat([torch.from_numpy(r.mask).bool(),
                        torch.ones(r.heads, r.query_blocks, 1, dtype=torch.bool)], dim=2).to(device)
    bq = r.block_q

    def sol_pairs(b, h, q_idx, kv_idx):
        return routed[h, q_idx // bq, vb[kv_idx]]

    kw = {}
    if "seq_lengths" in inspect.signature(flex.BlockMask.from_kv_blocks).parameters:
        kw["seq_lengths"] = (S, S)
    bm = flex.BlockMask.from_kv_blocks(kv_num, kv_idx, full_num, full_idx,
                                       BLOCK_SIZE=(bq, kv_block), mask_mod=sol_pairs, **kw)
    return bm, counts


def flex_sol(p, torch, ctx):
    """flex_sol: FlexAttention (bf16) with a BlockMask of exactly sol's attended pairs."""
    flex = _flex(torch)
    r = routing_mod.read(ctx["fixture"], p["routing"])
    kv_block = p["kv_block"] or r.block_k
    stand_in = getattr(flex, "__touchstone_stand_in__", False)
    if stand_in:
        attend = flex.flex_attention
    else:
        # Each routing's mask_mod is its own closure: dynamo compiles once per mask and guards on
        # it, so a table of many routings must not hit the recompile limit (past it, flex runs
        # eagerly and materialises S*S scores).
        cfg = torch._dynamo.config
        for key in ("recompile_limit", "cache_size_limit"):
            if hasattr(cfg, key):
                setattr(cfg, key, max(getattr(cfg, key), 64))
        if flex not in _COMPILED:
            _COMPILED[flex] = torch.compile(flex.flex_attention, dynamic=False)
        attend = _COMPILED[flex]
    state = {"kv_block": kv_block, "tried": False}

    def mask_for(q):
        if "bm" not in state:
            state["bm"], state["counts"] = flex_block_mask(flex, r, state["kv_block"], torch, q.device)
        return state["bm"]

    def fn(q, k, v, s):
        try:
            out = attend(q, k, v, block_mask=mask_for(q), scale=s)
            state["tried"] = True
            return out
        except Exception as e:  # noqa: BLE001
            # The kernel's key tile must divide the mask's key block; the pairs do not depend on
            # the block (partial blocks go through mask_mod), so the first call may retry at 128.
            if state["tried"] or p["kv_block"] or state["kv_block"] == 128:
                raise
            state["tried"], state["kv_block"], state["first_error"] = True, 128, f"{type(e).__name__}: {e}"[:300]
            state.pop("bm", None)
            return attend(q, k, v, block_mask=mask_for(q), scale=s)

    fn.touchstone_info = lambda q, k, v, s: dict(state["counts"], routing=r.name,
                                                 routing_grid=[r.block_q, r.block_k],
                                                 kv_block=state["kv_block"], compiled=not stand_in,
                                                 **({"kv_block_retry_after": state["first_error"]}
                                                    if "first_error" in state else {}))
    fn.touchstone_versions = {"flex_attention": "stand-in" if stand_in else torch.__version__}
    fn.touchstone_prepare = mask_for
    return fn
