"""Capturing a chain set from a model (docs/fixture-format.md "Chain sets"): every attention layer,
or every whole block, over several denoising steps, one fixture per block and step,
DIR/block<bb>_step<ss>.h5, with the root attributes block_index and step.

    cap = touchstone.AttentionSetCapture(model, "blocks.{b}.attn.core", "set/", model="my-dit")
    with torch.no_grad(), cap:
        for t in timesteps:            # a step: one forward of `model`, or a `with cap.step():`
            x = x + dt * (model(x, t) - x)

    cap = touchstone.BlockSetCapture(model, "blocks.{b}", STAGE_OF, "blocks/", model="my-dit",
                                     config=config, inputs=block_inputs, weights=WEIGHTS)

Each file is written when its layer's call is captured, so no more than one call's tensors are
held at a time, whatever the number of layers and steps. Files are written by fixture_io's
writers, so each is a fixture `touchstone fixture validate` accepts, and a block set is one
`touchstone chain DIR` reads."""
import contextlib
import os
import re
import shutil

from . import layouts
from .capture import AttentionCapture, BlockCapture, _detach, install, weights_from
from .fixture_io import write_block_fixture, write_fixture
from .schema import CaptureError, attention_config, full_config, tokens

_SET_FILE = re.compile(r"block\d+_step\d+\.h5")
# write_fixture's keywords a set passes on to every file; block_index, step, source and the
# module's name are the set's own.
_META = ("seed", "resolution", "frames", "notes", "compress", "bf16_bits")
_BLOCK_INPUTS = ("x", "modulation", "modulation_row", "positions")


def set_file(directory, block, step):
    """The file of block `block` at step `step`, as `fixture synth --blocks --steps` names it."""
    return os.path.join(directory, f"block{block:02d}_step{step:02d}.h5")


def _plural(n, what):
    return f"{n} {what}{'' if n == 1 else 's'}"


def resolve_modules(root, which, what):
    """{block index: (name, module)} of the modules `which` names in `root`: a pattern over
    root.named_modules() in which {b} stands for the block index ("blocks.{b}.attn.core"), a
    sequence of modules or names (block index = position), or {block index: module or name}."""
    named = [(n, m) for n, m in root.named_modules() if n]
    if isinstance(which, str):
        pattern = which[:-1] if which.endswith(".") else which
        if pattern.count("{b}") != 1:
            raise CaptureError(f"{what} pattern {which!r}: needs one {{b}} where the block index "
                               "stands (e.g. 'blocks.{b}.attn')")
        head, tail = pattern.split("{b}")
        rx = re.compile(re.escape(head) + r"(\d+)" + re.escape(tail))
        found = {}
        for name, m in named:
            hit = rx.fullmatch(name)
            if not hit:
                continue
            b = int(hit.group(1))
            if b in found:
                raise CaptureError(f"{what} pattern {which!r}: {found[b][0]!r} and {name!r} are "
                                   f"both block {b}")
            found[b] = (name, m)
        if not found:
            some = ", ".join(n for n, _ in named[:8]) + (", ..." if len(named) > 8 else "")
            raise CaptureError(f"no module of the {type(root).__name__} matches {what} pattern "
                               f"{which!r} (its modules: {some or 'none'})")
        return dict(sorted(found.items()))
    try:
        items = list(which.items()) if isinstance(which, dict) else list(enumerate(which))
    except TypeError:
        raise CaptureError(f"{what}s given as a {type(which).__name__}: expected a pattern such "
                           "as 'blocks.{b}', a sequence of modules or names (an nn.ModuleList "
                           "too), or {block index: module or name}") from None
    if not items:
        raise CaptureError(f"no {what} given")
    by_name, names = dict(named), {id(m): n for n, m in named}
    out = {}
    for b, m in items:
        if isinstance(b, bool) or not isinstance(b, int) or b < 0:
            raise CaptureError(f"{what} index {b!r}: expected a whole number >= 0")
        if isinstance(m, str):
            if m not in by_name:
                raise CaptureError(f"{what} {b}: no module named {m!r} in the "
                                   f"{type(root).__name__}")
            out[b] = (m, by_name[m])
        elif id(m) in names:
            out[b] = (names[id(m)], m)
        else:
            raise CaptureError(f"{what} {b}: the {type(m).__name__} given is not one of the "
                               f"{type(root).__name__}'s modules (named_modules()), so its forward "
                               "never runs as part of the model's")
    return dict(sorted(out.items()))


class _SetCapture:
    """What both set captures share: the folder, the steps, the with-block.

    A step is one forward of `module` (the model), unless a `with cap.step():` is open: then it
    is what that block encloses (a sampler calling the model more than once a step, e.g. with
    classifier-free guidance). Steps count from 0; `steps` (a collection of step numbers, default
    all) says which are written; the others run as usual."""

    def __init__(self, module, directory, *, model, steps, call, force, meta, what):
        unknown = sorted(set(meta) - set(_META))
        if unknown:
            raise CaptureError(f"{what}: unknown keyword {', '.join(unknown)} (a set's files take "
                               f"{', '.join(_META)}; block_index and step are the set's own)")
        if isinstance(call, bool) or not isinstance(call, int) or call < 0:
            raise CaptureError(f"call={call!r}: expected a whole number >= 0 (which call of a "
                               "step to keep, counting from 0)")
        if steps is not None:
            steps = set(steps)
            if not steps or any(isinstance(s, bool) or not isinstance(s, int) or s < 0
                                for s in steps):
                raise CaptureError(f"steps={sorted(steps, key=str)!r}: expected step numbers, "
                                   "whole numbers >= 0")
        self.module, self.directory = module, os.fspath(directory)
        self.model, self.call, self.force = str(model), call, force
        self.meta, self.what, self.keep = dict(meta), what, steps
        self.step_index = -1  # the step open, else the last one closed
        self.files = []  # written, in order
        self._open = None  # None | "forward" | "explicit"
        self._active = False
        self._undo = []
        self._entered = False

    def _where(self, b):
        return f"block {b} of step {self.step_index} ({self.targets[b][0]})"

    def _prepare_folder(self):
        d = self.directory
        if os.path.lexists(d) and not os.path.isdir(d):
            raise CaptureError(f"{d}: exists and is not a folder (the set's folder)")
        os.makedirs(d, exist_ok=True)
        old = sorted(n for n in os.listdir(d) if _SET_FILE.fullmatch(n))
        if old and not self.force:
            raise CaptureError(f"{os.path.join(d, old[0])}: exists ({_plural(len(old), 'file')} of "
                               "a set already in the folder, which would be replaced or read as "
                               "part of the new set); force=True replaces the set, with every "
                               "output its files hold")
        # Before the first new file: a set never mixes files of two captures.
        for n in old:
            os.remove(os.path.join(d, n))
            shutil.rmtree(os.path.join(d, n + ".outputs"), ignore_errors=True)

    def __enter__(self):
        if self._entered:
            raise CaptureError(f"{self.what}: already capturing (one with-block at a time)")
        self._prepare_folder()
        self._entered = True
        handles = [self.module.register_forward_pre_hook(lambda m, args: self._model_starts()),
                   self.module.register_forward_hook(lambda m, args, out: self._model_ends())]
        self._undo = [h.remove for h in handles] + self._install()
        return self

    def __exit__(self, exc_type, *exc):
        for undo in reversed(self._undo):
            undo()
        self._undo, self._entered, self._open = [], False, None
        if exc_type is None and not self.files:
            raise CaptureError(
                f"{self.what}: no step captured ({_plural(self.step_index + 1, 'step')} seen"
                + (f", steps= keeps {sorted(self.keep)}" if self.keep is not None else "")
                + "): run the model inside the with-block")

    @contextlib.contextmanager
    def step(self):
        """One denoising step, however many forwards of the model it holds."""
        if not self._entered:
            raise CaptureError(f"{self.what}: cap.step() outside the capture's with-block")
        if self._open is not None:
            raise CaptureError(f"{self.what}: cap.step() inside step {self.step_index} "
                               "(steps do not nest)")
        self._begin("explicit")
        ok = False
        try:
            yield self
            ok = True
        finally:
            if ok:
                self._end()
            self._open = None

    def _model_starts(self):
        if self._open is None:
            self._begin("forward")

    def _model_ends(self):
        if self._open == "forward":
            try:
                self._end()
            finally:
                self._open = None

    def _begin(self, how):
        self.step_index += 1
        self._open = how
        self._active = self.keep is None or self.step_index in self.keep
        if self._active:
            self._start_step()

    def _end(self):
        active, self._active = self._active, False
        if active:
            self._finish_step()

    def _in_step(self, b):
        """Whether a call of target b is to be looked at; a call outside any step is an error."""
        if self._open is None:
            raise CaptureError(f"{self.targets[b][0]} (block {b}) ran outside a step: a step is "
                               f"one forward of the {type(self.module).__name__} given, or a "
                               "`with cap.step():`")
        return self._active

    def _missing(self, b, seen, unit):
        raise CaptureError(f"{self._where(b)}: saw {_plural(seen, unit)}, wanted call {self.call} "
                           "(counting from 0): check that it is the instance the model runs "
                           "(model.named_modules()) and that the model called it in this step")


class AttentionSetCapture(_SetCapture):
    """q, k, v (and the output) of every attention layer at every step, one attention fixture per
    layer and step in `directory` (block<bb>_step<ss>.h5: bb the layer's block index).

    layers: a pattern over module.named_modules() with {b} for the block index
    ("blocks.{b}.attn.core"), a sequence of modules or names (block index = position), or
    {block index: module or name}; each a module called as f(q, k, v, ...) or an
    nn.MultiheadAttention, as AttentionCapture.hook takes them. Every layer must be called in
    every step written (the call-th call is kept), and all must agree in geometry (S, H, D and
    the softmax scale: one /config per set). segments, grid, softmax_scale: as
    AttentionCapture.write; model (the model's name), seed, resolution, frames, notes, compress,
    bf16_bits: write_fixture's, the same for every file."""

    def __init__(self, module, layers, directory, *, model, layout="BHSD", segments=None,
                 grid=None, softmax_scale=None, steps=None, call=0, batch=0, force=False, **meta):
        super().__init__(module, directory, model=model, steps=steps, call=call, force=force,
                         meta=meta, what="AttentionSetCapture")
        self.layout = layouts.check_layout(layout)
        self.targets = resolve_modules(module, layers, "attention layer")
        self.segments, self.grid, self.batch = segments, grid, batch
        self.softmax_scale = softmax_scale
        self._caps = {}
        self._geometry = None  # (key, config, where) of the set's first file

    def _install(self):
        undo = []
        for b, (_, m) in self.targets.items():
            undo.append(install(m, after=lambda args, kwargs, out, b=b, m=m:
                                self._called(b, m, args, kwargs, out)))
        return undo

    def _start_step(self):
        self._caps = {b: AttentionCapture(self.layout, self.call, self.batch) for b in self.targets}

    def _called(self, b, m, args, kwargs, out):
        if not self._in_step(b):
            return
        cap = self._caps[b]
        try:
            cap._recorder(m)(args, kwargs, out)
            if cap.seen == self.call + 1:
                self._write(b, cap)
        except CaptureError as e:
            raise CaptureError(f"{self._where(b)}: {e}") from None

    def _config(self, b, cap):
        S, H, D = cap.q.shape
        scale = self.softmax_scale if self.softmax_scale is not None else cap.scale
        key = (int(S), int(H), int(D), None if scale is None else float(scale))
        if self._geometry is None:
            config = attention_config(S, H, D, segments=self.segments, grid=self.grid,
                                      softmax_scale=scale)
            self._geometry = (key, config, self._where(b))
        first, config, where = self._geometry
        if key != first:
            def say(k):
                return f"[S, H, D] = [{k[0]}, {k[1]}, {k[2]}], scale {k[3] or 'default'}"
            raise CaptureError(f"q, k, v {say(key)}, {where} has {say(first)}: a set holds one "
                               "geometry (give the layers of one kind, e.g. self-attention only)")
        return config

    def _write(self, b, cap):
        path = set_file(self.directory, b, self.step_index)
        write_fixture(path, cap.q, cap.k, cap.v, self._config(b, cap), model=self.model,
                      observed=cap.out, block_index=b, step=self.step_index,
                      extra_attrs={"captured_module": self.targets[b][0]}, **self.meta)
        cap.q = cap.k = cap.v = cap.out = None  # written: nothing of it is held any longer
        self.files.append(path)

    def _finish_step(self):
        for b, cap in self._caps.items():
            if cap.seen <= self.call:
                self._missing(b, cap.seen, "call")


class BlockSetCapture(_SetCapture):
    """Whole blocks at every step: one block fixture per block and step in `directory`
    (block<bb>_step<ss>.h5), which `touchstone chain DIR` reads as a captured set.

    blocks: the block modules, as AttentionSetCapture's layers ("blocks.{b}"; a trailing "." is
    allowed). stage_of, layouts: BlockCapture's, with module names relative to a block. config:
    the block's /config (block.md's geometry; one for the set). inputs(args, kwargs): what a
    block's forward was called with -> {"x": [S, M], "modulation": [R, 6, M], "positions":
    [S, 3], and "modulation_row": [S] when R > 1}, tensors of the fixture's shapes. weights:
    {block.md weight name: parameter name relative to a block} (weights_from)."""

    def __init__(self, module, blocks, stage_of, directory, *, model, config, inputs, weights,
                 layouts=None, steps=None, call=0, batch=0, force=False, **meta):
        super().__init__(module, directory, model=model, steps=steps, call=call, force=force,
                         meta=meta, what="BlockSetCapture")
        if not callable(inputs):
            raise CaptureError("BlockSetCapture: inputs must be a function (args, kwargs) -> "
                               f"{{{', '.join(_BLOCK_INPUTS)}: tensor}}")
        self.targets = resolve_modules(module, blocks, "block")
        self.config, self.inputs, self.weight_names = full_config(config), inputs, dict(weights)
        self._caps, self._forwards, self._kept = {}, {}, {}
        for b, (name, m) in self.targets.items():
            try:
                self._caps[b] = BlockCapture(m, stage_of, layouts=layouts, batch=batch, call=call)
                weights_from(m, self.weight_names)
            except CaptureError as e:
                raise CaptureError(f"block {b} ({name}): {e}") from None

    def _install(self):
        undo = []
        for b, (_, m) in self.targets.items():
            cap = self._caps[b]
            cap.__enter__()
            undo.append(cap.__exit__)
            undo.append(install(m, before=lambda args, kwargs, b=b: self._starts(b, args, kwargs),
                                after=lambda args, kwargs, out, b=b: self._ends(b)))
        return undo

    def _start_step(self):
        for cap in self._caps.values():
            cap.reset()
        self._forwards = {b: 0 for b in self.targets}
        self._kept = {}

    def _starts(self, b, args, kwargs):
        if not self._in_step(b) or self._forwards[b] != self.call:
            return
        try:
            got = self.inputs(args, kwargs)
            if not isinstance(got, dict):
                raise CaptureError(f"inputs returned a {type(got).__name__}, expected a dict")
            unknown = sorted(set(got) - set(_BLOCK_INPUTS))
            missing = [k for k in ("x", "modulation", "positions") if k not in got]
            if unknown or missing:
                raise CaptureError(f"inputs gave {', '.join(map(repr, got))}; expected x, "
                                   "modulation, positions and optionally modulation_row"
                                   + (f" (unknown: {', '.join(unknown)})" if unknown else ""))
            # Copies: the block or the sampler may change its inputs in place afterwards.
            self._kept = {k: _detach(t) for k, t in got.items()}
        except CaptureError as e:
            raise CaptureError(f"{self._where(b)}: {e}") from None

    def _ends(self, b):
        if not self._active:
            return
        n = self._forwards[b]
        self._forwards[b] = n + 1
        if n != self.call:
            return
        path = set_file(self.directory, b, self.step_index)
        name, m = self.targets[b]
        try:
            stages = self._caps[b].stages(self.config)
            self._caps[b].raw.clear()
            kept, self._kept = self._kept, {}
            _check_inputs(kept, self.config)
            write_block_fixture(path, self.config, x=kept["x"], modulation=kept["modulation"],
                                modulation_row=kept.get("modulation_row"),
                                positions=kept["positions"],
                                weights=weights_from(m, self.weight_names), stages=stages,
                                model=self.model, block_index=b, step=self.step_index,
                                extra_attrs={"captured_module": name}, **self.meta)
        except CaptureError as e:
            raise CaptureError(f"{self._where(b)}: {e}") from None
        self.files.append(path)

    def _finish_step(self):
        for b, n in self._forwards.items():
            if n <= self.call:
                self._missing(b, n, "forward")


def _check_inputs(kept, config):
    """The block's inputs against /config before anything is written: the C++ loader would refuse
    them later, far from the model that gave them."""
    S, M = tokens(config), int(config["hidden"])
    x, mod = kept["x"], kept["modulation"]
    if tuple(x.shape) != (S, M):
        raise CaptureError(f"inputs: x {tuple(x.shape)}, expected [S, M] = ({S}, {M}) (one "
                           "sequence: x[batch] of a [B, S, M] input)")
    if len(mod.shape) != 3 or tuple(mod.shape[1:]) != (6, M):
        raise CaptureError(f"inputs: modulation {tuple(mod.shape)}, expected [R, 6, M] with "
                           f"M = {M}")
    if mod.shape[0] > 1 and "modulation_row" not in kept:
        raise CaptureError(f"inputs: modulation has {mod.shape[0]} rows and no modulation_row "
                           "says which row each token takes")
