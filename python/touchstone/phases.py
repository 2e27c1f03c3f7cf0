"""Where a command's wall time goes, for the one who asks (the C++ side's core/phase.hpp: the
same switch, TOUCHSTONE_PHASES=1, and the same line, "touchstone: phase NAME S s (pid P)" on
stderr as each phase ends, nested phases indented), so a replay on the GPU machine, where nobody
profiles interactively, names its own cost in the log. Off, a phase costs one dictionary lookup."""
import contextlib
import os
import sys
import time


def enabled():
    v = os.environ.get("TOUCHSTONE_PHASES", "")
    return v not in ("", "0")


_depth = [0]


@contextlib.contextmanager
def phase(name):
    if not enabled():
        yield
        return
    depth = _depth[0]
    _depth[0] += 1
    t0 = time.perf_counter()
    try:
        yield
    finally:
        _depth[0] -= 1
        print(f"touchstone: phase {'  ' * depth}{name} {time.perf_counter() - t0:.3f} s "
              f"(pid {os.getpid()})", file=sys.stderr, flush=True)
