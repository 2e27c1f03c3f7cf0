"""Capturing what a model's attention and block saw, with forward hooks or a context manager.

Attention (q, k, v at one attention call, in the model's own layout):

    cap = touchstone.AttentionCapture(layout="BHSD")          # or "BSHD"
    with cap.hook(model.blocks[24].attn.core):                # a module called as f(q, k, v, ...)
        model(x)
    # or, around a function the model calls, e.g. torch.nn.functional.scaled_dot_product_attention:
    with cap.patch(torch.nn.functional, "scaled_dot_product_attention"):
        model(x)
    cap.write("att.h5", model="my-dit rev abc", segments=..., grid=...)

The call taken is the `call`-th one (default 0, the first); q, k, v are the positional
arguments 0, 1, 2 or the keywords q/k/v or query/key/value (seen on torch 1.13 too, whose
hooks see positional arguments only: the module's forward is wrapped there). An
nn.MultiheadAttention (torchvision's ViT attention) gives its per-head in-projections. A hook
or patch that saw no call is a CaptureError when its with-block ends. The call's output becomes
/attention/observed; the softmax scale is the call's scale= / sm_scale= keyword, else
write(softmax_scale=...), else 1/sqrt(head_dim). The fixture needs no block sizes (schema.attention_config).

A whole block (every stage of block.md, through a mapping from module names to stages):

    cap = touchstone.BlockCapture(block, {"norm1": "norm1", "attn.qkv": "qkv", ...},
                                  layouts={"attention": "BHSD"})
    with cap:
        block(x, ...)
    touchstone.write_block_fixture("blk.h5", config, x=x[0], ..., stages=cap.stages(config))
"""
import contextlib

from . import layouts
from .fixture_io import write_fixture
from .schema import STAGES, CaptureError, attention_config, full_config, stage_shape

_QKV_NAMES = (("q", "query"), ("k", "key"), ("v", "value"))


def _detach(t):
    return t.detach().clone() if hasattr(t, "detach") else t


def _qkv_of(args, kwargs):
    out = []
    for i, names in enumerate(_QKV_NAMES):
        if len(args) > i:
            out.append(args[i])
            continue
        hit = [kwargs[n] for n in names if n in kwargs]
        if not hit:
            raise CaptureError(f"attention call: no {names[0]} (positional argument {i} or "
                               f"keyword {' / '.join(names)})")
        out.append(hit[0])
    return out


def install(module, before=None, after=None):
    """Calls before(args, kwargs) ahead of each forward of `module` and after(args, kwargs, out)
    behind it; returns the function that undoes it. Keyword arguments are seen on any torch: by
    hooks with kwargs where torch has them (2.0+), else by wrapping the module's forward (torch
    1.13 hooks see positional arguments only)."""
    import inspect

    if "with_kwargs" in inspect.signature(module.register_forward_hook).parameters:
        handles = []
        if before is not None:
            handles.append(module.register_forward_pre_hook(
                lambda m, args, kwargs: before(args, kwargs), with_kwargs=True))
        if after is not None:
            handles.append(module.register_forward_hook(
                lambda m, args, kwargs, out: after(args, kwargs, out), with_kwargs=True))
        return lambda: [h.remove() for h in handles]
    had = "forward" in vars(module)
    original = module.forward

    def forward(*args, **kwargs):
        if before is not None:
            before(args, kwargs)
        out = original(*args, **kwargs)
        if after is not None:
            after(args, kwargs, out)
        return out

    module.forward = forward

    def undo():
        if had:
            module.forward = original
        else:
            del module.forward
    return undo


class AttentionCapture:
    """Takes q, k, v (and the output) of the `call`-th attention call it sees."""

    def __init__(self, layout="BHSD", call=0, batch=0):
        self.layout = layouts.check_layout(layout)
        self.call, self.batch = call, batch
        self.seen = 0
        self.q = self.k = self.v = self.out = None
        self.scale = None

    @property
    def captured(self):
        return self.q is not None

    def record(self, args, kwargs, out):
        if self.seen == self.call:
            q, k, v = _qkv_of(args, kwargs)
            self.q, self.k, self.v = (layouts.to_shd(_detach(t), self.layout, self.batch, n)
                                      for t, n in ((q, "q"), (k, "k"), (v, "v")))
            if out is not None and hasattr(out, "shape") and tuple(out.shape) == tuple(q.shape):
                self.out = layouts.to_shd(_detach(out), self.layout, self.batch, "output")
            self.scale = kwargs.get("scale", kwargs.get("sm_scale"))
        self.seen += 1

    def record_mha(self, module, args, kwargs, out):
        """An nn.MultiheadAttention call: its q, k, v are the per-head projections of its
        query, key, value inputs (computed here with the module's own weights, as its forward
        does), [B, S, H, D]. Its output is after out_proj, so it is not kept as observed."""
        if self.seen == self.call:
            names = ("query", "key", "value")
            inputs = [args[i] if len(args) > i else kwargs.get(n) for i, n in enumerate(names)]
            if any(t is None for t in inputs):
                raise CaptureError("nn.MultiheadAttention call: no "
                                   f"{names[[t is None for t in inputs].index(True)]}")
            # forward(query, key, value, key_padding_mask, need_weights, attn_mask, ...)
            for key, at in (("key_padding_mask", 3), ("attn_mask", 5)):
                if kwargs.get(key) is not None or (len(args) > at and args[at] is not None):
                    raise CaptureError(f"nn.MultiheadAttention call with {key}: a fixture holds "
                                       "non-causal attention over the whole sequence")
            if kwargs.get("is_causal"):
                raise CaptureError("nn.MultiheadAttention call with is_causal=True: a fixture "
                                   "holds non-causal attention over the whole sequence")
            q, k, v = _mha_projections(module, inputs)
            self.q, self.k, self.v = (layouts.to_shd(t, "BSHD", self.batch, n)
                                      for t, n in ((q, "q"), (k, "k"), (v, "v")))
            self.out = None
            self.scale = None  # MultiheadAttention scales by 1/sqrt(head_dim), the default
        self.seen += 1

    def _recorder(self, module):
        import torch

        if isinstance(module, torch.nn.MultiheadAttention):
            return lambda args, kwargs, out: self.record_mha(module, args, kwargs, out)
        return self.record

    def _check_seen(self, what, hint):
        if self.seen <= self.call:
            raise CaptureError(f"{what}: saw {self.seen} call{'s' if self.seen != 1 else ''}, "
                               f"wanted call {self.call} (counting from 0); {hint}")

    @contextlib.contextmanager
    def hook(self, module):
        """Takes the call-th call of a module: one whose forward takes q, k, v (positional, or
        keywords q/k/v or query/key/value), or an nn.MultiheadAttention (torchvision's ViT
        attention included), whose per-head projections are taken; keyword arguments are seen
        on any torch (install). At the end, a call never seen is a CaptureError."""
        undo = install(module, after=self._recorder(module))
        try:
            yield self
        finally:
            undo()
        self._check_seen(f"hook on {type(module).__name__}",
                         "the model never called this module during the block: check that it "
                         "is the instance the model runs (model.named_modules()), and that the "
                         "forward ran inside the with-block")

    @contextlib.contextmanager
    def patch(self, owner, name):
        """Replaces owner.<name> (a function the model calls, e.g. F.scaled_dot_product_attention
        or the model's own attention function) by a recording wrapper while the block runs.
        At the end, a call never seen is a CaptureError."""
        if not hasattr(owner, name):
            raise CaptureError(f"patch: {getattr(owner, '__name__', owner)!r} has no attribute "
                               f"{name!r}")
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            out = original(*args, **kwargs)
            self.record(args, kwargs, out)
            return out

        setattr(owner, name, wrapper)
        try:
            yield self
        finally:
            setattr(owner, name, original)
        self._check_seen(
            f"patch of {getattr(owner, '__name__', type(owner).__name__)}.{name}",
            "the model never called it through that name: a module that imported the function "
            "itself (from ... import f) holds its own reference, so patch that module's name; "
            "nn.MultiheadAttention in eval mode may take a fused path that calls no Python "
            "function (hook the module instead: cap.hook(mha))")

    def config(self, segments=None, grid=None, softmax_scale=None):
        if not self.captured:
            raise CaptureError(f"no attention call captured (saw {self.seen}, wanted call "
                               f"{self.call})")
        S, H, D = self.q.shape
        scale = softmax_scale if softmax_scale is not None else self.scale
        return attention_config(S, H, D, segments=segments, grid=grid, softmax_scale=scale)

    def write(self, path, *, model, segments=None, grid=None, softmax_scale=None, **meta):
        """An attention-only fixture of the captured call (observed = the call's output)."""
        c = self.config(segments, grid, softmax_scale)
        write_fixture(path, self.q, self.k, self.v, c, model=model, observed=self.out, **meta)


class BlockCapture:
    """Forward hooks on a block's submodules; each module's output is a stage.

    stage_of: {module name (as named_modules() gives it): stage name of block.md}.
    layouts: {stage: "BHSD" | "BSHD"} for q_rope, k_rope, attention outputs with a head axis
    (default "BSHD"); other stages are [B, S, ...] and are reshaped to the stage's shape
    (e.g. qkv [B, S, 3*H*D] -> [S, 3, H, D]). call: which forward of the block to keep."""

    def __init__(self, module, stage_of, layouts=None, batch=0, call=0):
        named = dict(module.named_modules())
        unknown = [n for n in stage_of if n not in named]
        if unknown:
            raise CaptureError(f"no module named {', '.join(map(repr, unknown))} in the block "
                               f"(it has {', '.join(n for n in named if n)})")
        for stage in stage_of.values():
            if stage not in STAGES:
                raise CaptureError(f"unknown stage {stage!r} (block.md names {', '.join(STAGES)})")
        self.module, self.stage_of, self.batch, self.call = module, dict(stage_of), batch, call
        self.layouts = dict(layouts or {})
        self.raw, self._handles, self._named = {}, [], named
        self._count = {}

    def __enter__(self):
        for name, stage in self.stage_of.items():
            def hook(m, args, out, stage=stage):
                n = self._count.get(stage, 0)
                if n == self.call:
                    self.raw[stage] = _detach(out[0] if isinstance(out, tuple) else out)
                self._count[stage] = n + 1
            self._handles.append(self._named[name].register_forward_hook(hook))
        return self

    def __exit__(self, *exc):
        for h in self._handles:
            h.remove()
        self._handles = []

    def reset(self):
        """Forgets the stages kept and the forwards counted: the next forward is call 0 again
        (how one denoising step's capture starts afresh, BlockSetCapture)."""
        self.raw, self._count = {}, {}

    def stages(self, config):
        """{stage: tensor of the stage's fixture shape}, in block order."""
        c = full_config(config)
        out = {}
        for stage in STAGES:
            if stage not in self.raw:
                continue
            t = self.raw[stage]
            lay = self.layouts.get(stage)
            if lay is not None:
                t = layouts.to_shd(t, lay, self.batch, stage)
            elif len(t.shape) >= 2:
                t = t[self.batch]
            shape = stage_shape(stage, c)
            if t.numel() != _numel(shape):
                raise CaptureError(f"stage {stage}: {tuple(t.shape)} holds {t.numel()} values, "
                                   f"the stage's shape {shape} needs {_numel(shape)}")
            out[stage] = t.reshape(shape)
        return out


def _mha_projections(module, inputs):
    """q, k, v [B, S, H, D] of an nn.MultiheadAttention call's query, key, value, with its own
    in-projection weights (torch.nn.functional.multi_head_attention_forward's first step)."""
    import torch

    if module.bias_k is not None or module.add_zero_attn:
        raise CaptureError("nn.MultiheadAttention with add_bias_kv or add_zero_attn: the extra "
                           "key/value rows are not a fixture's attention")
    E, H = module.embed_dim, module.num_heads
    if module._qkv_same_embed_dim:
        weights = module.in_proj_weight.chunk(3)
    else:
        weights = (module.q_proj_weight, module.k_proj_weight, module.v_proj_weight)
    biases = module.in_proj_bias.chunk(3) if module.in_proj_bias is not None else (None,) * 3
    out = []
    with torch.no_grad():
        for x, w, b in zip(inputs, weights, biases):
            if x.dim() == 2:  # unbatched [S, E]
                x = x.unsqueeze(0 if module.batch_first else 1)
            if not module.batch_first:
                x = x.transpose(0, 1)  # [S, B, E] -> [B, S, E]
            p = torch.nn.functional.linear(x, w, b)
            out.append(p.reshape(p.shape[0], p.shape[1], H, E // H).detach().clone())
    return out


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def weights_from(module, names):
    """{block.md weight name: tensor} from a module's state_dict: names maps weight name ->
    parameter name, e.g. {"w_qkv": "attn.qkv.weight", "norm1_w": "norm1.weight", ...}."""
    sd = module.state_dict()
    missing = [p for p in names.values() if p not in sd]
    if missing:
        raise CaptureError(f"no parameter {', '.join(map(repr, missing))} in the module")
    return {w: sd[p].detach() for w, p in names.items()}
