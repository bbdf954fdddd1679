"""Everything the runner prints goes through here, and through the masker.

stdout carries results (``--json`` objects, plan text, job output); stderr
carries human messages. Colour follows ``--no-color``, ``NO_COLOR``, ``FORCE_COLOR``
and ``CI``. ``--quiet`` keeps errors only; ``--verbose`` adds ``detail`` lines.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Callable, TextIO

from runner.secrets import Masker, SecretScope
from runner.ui import ci


class Output:
    def __init__(self, json_mode: bool = False, color: bool = True, verbose: bool = False, masker: Masker | None = None,
                 fallback: Callable[[], Masker] | None = None, quiet: bool = False):
        self.json_mode = json_mode
        self.verbose = verbose and not quiet
        self.quiet = quiet
        self._masker = masker
        # Until a command installs its masker (``prepare``), messages are masked with the
        # secrets of the environment and env file: computed once, only if something prints.
        self._fallback = fallback
        self.color = color and not os.environ.get("NO_COLOR") and (_forced_color() or (
            os.environ.get("CI", "").lower() not in ("true", "1") and sys.stderr.isatty()))
        # Progress bars and spinners only for a person at a terminal, never in CI logs.
        self.interactive = self.color and sys.stderr.isatty() and not json_mode and not quiet

    @property
    def masker(self) -> Masker:
        if self._masker is None:
            self._masker = self._fallback() if self._fallback else SecretScope().masker  # nothing in scope yet
        return self._masker

    def use_masker(self, masker: Masker) -> None:
        self._masker = masker

    # -- human messages (stderr) ------------------------------------------
    def _err(self, prefix: str, message: str, style: str) -> None:
        text = self.masker.mask(message)
        if prefix in ("error: ", "warning: ") and ci.annotate(prefix[:-2], text):
            return  # under GitHub Actions: an annotation instead of a plain line
        if self.color:
            prefix = f"\033[{style}m{prefix}\033[0m"
        print(ci.neutralise(f"{prefix}{text}"), file=sys.stderr, flush=True)

    def error(self, message: str, hint: str | None = None) -> None:
        self._err("error: ", message, "1;31")
        if hint:
            self._err("  fix: ", hint, "33")

    def warn(self, message: str) -> None:
        if not self.quiet:
            self._err("warning: ", message, "33")

    def notice(self, message: str) -> None:
        if not self.quiet:
            self._err("notice: ", message, "36")

    def info(self, message: str) -> None:
        if not self.quiet:
            self._err("", message, "0")

    def detail(self, message: str) -> None:
        """What ``--verbose`` adds for a person (files loaded, where a decision came from)."""
        if self.verbose:
            self._err("", message, "2")

    def debug(self, message: str) -> None:
        if self.verbose:
            self._err("debug: ", message, "2")

    # -- results (stdout) ---------------------------------------------------
    def result(self, text: str, stream: TextIO | None = None) -> None:
        print(ci.neutralise(self.masker.mask(text)), file=stream or sys.stdout, flush=True)

    def json(self, obj: Any) -> None:
        """Mask every string (keys too) of ``obj``, then serialise: the output stays valid
        JSON, and a mask never lands on a number, a quote or an escape of the text.
        json.dumps raises on a Secret: an unredacted value cannot slip through."""
        print(json.dumps(_mask_strings(obj, self.masker), indent=2), flush=True)

    def rich_console(self, stderr: bool = False):
        """A rich console for tables; imported only when a human view is drawn."""
        from rich.console import Console

        return Console(stderr=stderr, no_color=not self.color, highlight=False, soft_wrap=True)


def _forced_color() -> bool:
    """``FORCE_COLOR`` (any value but empty, 0 or false) asks for colour without a terminal."""
    return os.environ.get("FORCE_COLOR", "").lower() not in ("", "0", "false", "no")


def _mask_strings(obj: Any, masker: Masker) -> Any:
    if isinstance(obj, str):
        return masker.mask(obj)
    if isinstance(obj, dict):
        return {(masker.mask(k) if isinstance(k, str) else k): _mask_strings(v, masker) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_mask_strings(v, masker) for v in obj]
    if isinstance(obj, (int, float)) and not isinstance(obj, bool):
        masked = masker.mask(str(obj))  # a number that is a secret's value becomes the string "***"
        return obj if masked == str(obj) else masked
    return obj
