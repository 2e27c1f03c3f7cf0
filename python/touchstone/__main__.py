import sys

from . import _deps

try:
    from .cli import main
except ModuleNotFoundError as e:  # one line naming the package, never a traceback
    if _deps.missing(e) is None:
        raise
    print(f"python3 -m touchstone: error: {_deps.message(_deps.missing(e), sys.executable)}",
          file=sys.stderr)
    sys.exit(2)

sys.exit(main())
