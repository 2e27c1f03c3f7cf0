"""touchstone's Python side (docs/python.md): capture fixtures from PyTorch models, replay kernels
on them, store kernel outputs and timings, and gate them in-process through the C++ library
(the extension touchstone._core) — or in pytest with touchstone.testing.

    import touchstone
    cap = touchstone.AttentionCapture(layout="BHSD")
    with cap.hook(model.blocks[24].attn.core):
        model(x)
    cap.write("att.h5", model="my-dit")
    run = touchstone.gate("att.h5", "stored:mine", gate="sage_compat")

numpy and h5py are needed; torch only where torch tensors are handled. Names are imported on
first use, so that `python3 -m touchstone` reports a missing package in one line."""
import importlib

# name: the module that defines it.
_EXPORTS = {
    "AttentionCapture": "capture", "BlockCapture": "capture", "weights_from": "capture",
    "AttentionSetCapture": "capture_sets", "BlockSetCapture": "capture_sets",
    "Fixture": "fixture_io", "add_output": "fixture_io", "read_fixture": "fixture_io",
    "read_tensor": "fixture_io", "read_timings": "fixture_io",
    "write_block_fixture": "fixture_io", "write_fixture": "fixture_io",
    "LAYOUTS": "layouts", "from_shd": "layouts", "to_shd": "layouts",
    "CLOCKS": "schema", "SCHEMA": "schema", "STAGES": "schema", "VERSION": "schema",
    "CaptureError": "schema", "attention_config": "schema", "full_config": "schema",
    "stage_shape": "schema", "VERDICTS": "tables",
    "gate": "api", "compare": "api", "load_gate": "api", "validate_fixture": "api",
    "synthesize": "api", "extension_available": "api",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name):
    if name == "__version__":
        from .tables import VERSION

        return VERSION
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'touchstone' has no attribute {name!r}")


def __dir__():
    return __all__
