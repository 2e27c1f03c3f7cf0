"""touchstone's Python side: capture fixtures from PyTorch models, replay kernels on them,
store kernel outputs and timings for the touchstone gate (fixture-schema.md).

    import touchstone
    cap = touchstone.AttentionCapture(layout="BHSD")
    with cap.hook(model.blocks[24].attn.core):
        model(x)
    cap.write("att.h5", model="my-dit")
    touchstone.add_output("att.h5", "mine", out, timings_ms=ms, clock="device_events")

numpy and h5py are needed; torch only where torch tensors are handled.
"""
from .capture import AttentionCapture, BlockCapture, weights_from
from .fixture_io import (Fixture, add_output, read_fixture, read_tensor, read_timings,
                         write_block_fixture, write_fixture)
from .layouts import LAYOUTS, from_shd, to_shd
from .schema import (CLOCKS, SCHEMA, STAGES, VERSION, CaptureError, attention_config,
                     full_config, stage_shape)

__all__ = ["AttentionCapture", "BlockCapture", "weights_from", "Fixture", "add_output",
           "read_fixture", "read_tensor", "read_timings", "write_block_fixture", "write_fixture",
           "LAYOUTS", "from_shd", "to_shd", "CLOCKS", "SCHEMA", "STAGES", "VERSION",
           "CaptureError", "attention_config", "full_config", "stage_shape"]
