"""The package's third-party dependencies and how to install them, for a one-line error in place
of an import traceback (scripts/install-deps installs the Debian packages)."""

# import name: (Debian package, pip name)
DEPENDENCIES = {
    "numpy": ("python3-numpy", "numpy"),
    "h5py": ("python3-h5py", "h5py"),
    "torch": ("python3-torch", "torch"),
    "torchvision": ("python3-torchvision", "torchvision"),
    "pytest": ("python3-pytest", "pytest"),
}


def missing(error):
    """The top-level name of a ModuleNotFoundError's module when it is one of ours, else None."""
    name = (getattr(error, "name", None) or "").split(".")[0]
    return name if name in DEPENDENCIES else None


def message(name, python):
    deb, pip = DEPENDENCIES[name]
    return (f"the Python package '{name}' is missing for {python}: install it with "
            f"`apt-get install {deb}` (Debian's /usr/bin/python3) or `{python} -m pip install {pip}`")
