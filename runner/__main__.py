"""``python -m runner``. Inside a Primus checkout the current directory's own ``runner/``
(the launcher's scripts) can be imported as ``runner`` first: then say so and what to run."""

import os
import sys


def _shadowed() -> str | None:
    """The directory that was imported as ``runner`` when it is not this package."""
    package = sys.modules.get("runner")
    here = os.path.realpath(os.path.dirname(os.path.abspath(__file__)))
    paths = [os.path.realpath(p) for p in getattr(package, "__path__", [])]
    if here in paths and hasattr(package, "__version__"):
        return None
    return next((p for p in paths if p != here), "another runner package")


_shadow = _shadowed()
if _shadow is not None:
    sys.stderr.write(
        f"error: `python -m runner` found {_shadow} first: this directory's own runner/ (a Primus checkout's "
        "launcher scripts) shadows primus-runner's package\n"
        "  fix: run `primus-runner …` instead, or `python3 -P -m runner …` (-P keeps the current directory off the "
        "import path)\n")
    raise SystemExit(2)

from runner.cli import main  # noqa: E402  (after the check: the import is what a shadow breaks)

raise SystemExit(main())
