"""Where the package finds touchstone's C++ side: the extension touchstone._core (pybind11,
built by CMake into <build>/python/touchstone/) and the `touchstone` CLI.

Searched in this order (docs/python.md "The extension"):
  1. touchstone/_core*.so installed beside this file (a wheel, or a copy);
  2. $TOUCHSTONE_BUILD_DIR/python/touchstone/;
  3. the folder of $TOUCHSTONE_CLI (the built binary), then its python/touchstone/;
  4. build/ beside python/ in a source checkout.
TOUCHSTONE_EXTENSION=0 turns it off (the package then reads tables.json and calls the CLI).
An extension built for another Python (its ABI suffix differs) is passed over, so a checkout
built with Debian's python3 still imports, without the extension, under another interpreter."""
import importlib.machinery
import importlib.util
import os
import shutil
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_state = {}


def build_dirs():
    """The build folders searched, in order (existing ones only)."""
    out = []
    if os.environ.get("TOUCHSTONE_BUILD_DIR"):
        out.append(os.environ["TOUCHSTONE_BUILD_DIR"])
    if os.environ.get("TOUCHSTONE_CLI"):
        out.append(os.path.dirname(os.path.abspath(os.environ["TOUCHSTONE_CLI"])))
    out.append(os.path.join(os.path.dirname(os.path.dirname(_HERE)), "build"))
    seen, dirs = set(), []
    for d in out:
        d = os.path.abspath(d)
        if d not in seen and os.path.isdir(d):
            seen.add(d)
            dirs.append(d)
    return dirs


def _candidates():
    folders = [_HERE] + [os.path.join(d, "python", "touchstone") for d in build_dirs()]
    for folder in folders:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "_core" + suffix)
            if os.path.isfile(path):
                yield path


def _load():
    if "core" in _state:
        return _state["core"]
    core, why = None, "not built (cmake configures it when pybind11-dev and python3-dev are installed)"
    if os.environ.get("TOUCHSTONE_EXTENSION") == "0":
        _state["core"], _state["why"] = None, "turned off (TOUCHSTONE_EXTENSION=0)"
        return None
    for path in _candidates():
        try:
            loader = importlib.machinery.ExtensionFileLoader("touchstone._core", path)
            spec = importlib.util.spec_from_file_location("touchstone._core", path, loader=loader)
            module = importlib.util.module_from_spec(spec)
            loader.exec_module(module)
            sys.modules.setdefault("touchstone._core", module)
            core, why = module, path
            break
        except ImportError as e:  # another interpreter's build, or a missing shared library
            why = f"{path}: {e}"
    _state["core"], _state["why"] = core, why
    return core


def core():
    """The extension module, or None where it is not available (why_not() says why)."""
    return _load()


def why_not():
    _load()
    return _state["why"]


def require(what):
    """The extension, or an ImportError saying how to get it."""
    m = _load()
    if m is None:
        from .schema import CaptureError

        raise CaptureError(
            f"{what} needs touchstone's C++ extension (touchstone._core), which is {why_not()}: "
            "build it with `cmake -S . -B build && cmake --build build --target touchstone` "
            "(Debian: apt-get install pybind11-dev python3-dev) and set TOUCHSTONE_BUILD_DIR=build "
            "when the package is not run from the checkout")
    return m


def cli():
    """The touchstone binary: $TOUCHSTONE_CLI, <build>/touchstone, or `touchstone` on PATH; None
    where there is none."""
    if os.environ.get("TOUCHSTONE_CLI") and os.path.isfile(os.environ["TOUCHSTONE_CLI"]):
        return os.environ["TOUCHSTONE_CLI"]
    for d in build_dirs():
        path = os.path.join(d, "touchstone")
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return shutil.which("touchstone")
