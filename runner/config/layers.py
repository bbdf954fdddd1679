"""Which config files a command reads, in order, and which of them are the project's.

Lowest first (the built-in defaults come before all of these):

1. a Primus checkout's ``runner/.primus.yaml`` (the launcher's own system default;
   the checkout is ``$PRIMUS_PATH``, else the current directory when it holds
   ``runner/primus-cli-direct.sh``) — a project file;
2. ``~/.primus.yaml`` — the user's;
3. the project file: ``.primus.yaml`` in the current directory, else in the nearest
   parent up to the repository root (the first directory holding ``.git``), as git and
   compose find theirs; outside a repository only the current directory is looked at,
   so a ``/tmp/.primus.yaml`` another user planted is never picked up;
4. ``$PRIMUS_RUNNER_CONFIG`` — the user's, like ``--config``;
5. ``--config FILE`` — the user's.

Project files are untrusted until ``primus-runner trust`` (``runner.config.trust``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from runner.records import dataclass

FILE_NAME = ".primus.yaml"
CONFIG_ENV = "PRIMUS_RUNNER_CONFIG"
CHECKOUT_FILE = "runner/.primus.yaml"
DIRECT_SCRIPT = "runner/primus-cli-direct.sh"


@dataclass(frozen=True)
class LayerFile:
    """One file layer: where it is, whether it must exist, and whose it is."""

    path: Path
    kind: str  # checkout | user | project | env | config
    must_exist: bool = False

    @property
    def project(self) -> bool:
        """A file that came with the directory (a clone), not one the user named or owns."""
        return self.kind in ("checkout", "project")


def checkout_dir(environ: Mapping[str, str], cwd: Path) -> Path | None:
    """The Primus checkout, found as the launcher finds it."""
    if environ.get("PRIMUS_PATH"):
        return Path(os.path.abspath(environ["PRIMUS_PATH"]))
    return cwd if (cwd / DIRECT_SCRIPT).is_file() else None


def find_project_file(cwd: Path) -> Path | None:
    """``.primus.yaml`` here, else in the nearest parent up to the repository root."""
    here = Path(os.path.abspath(cwd))
    if (here / FILE_NAME).is_file():
        return here / FILE_NAME
    root = next((d for d in (here, *here.parents) if (d / ".git").exists()), None)
    if root is None:
        return None
    for directory in here.parents:
        if (directory / FILE_NAME).is_file():
            return directory / FILE_NAME
        if directory == root:
            break
    return None


def layer_files(extra: str | None, environ: Mapping[str, str] | None = None, cwd: Path | None = None,
                project_dir: Path | None = None, user_files: bool = True) -> list[LayerFile]:
    """The file layers above the built-in defaults, lowest first (files that do not exist
    are left out unless named explicitly, which then must exist)."""
    environ = os.environ if environ is None else environ
    cwd = Path.cwd() if cwd is None else cwd
    layers: list[LayerFile] = []
    if user_files:
        checkout = checkout_dir(environ, cwd)
        if checkout is not None and (checkout / CHECKOUT_FILE).is_file():
            layers.append(LayerFile(checkout / CHECKOUT_FILE, "checkout"))
        home = Path.home() / FILE_NAME
        if home.is_file():
            layers.append(LayerFile(home, "user"))
        project = (project_dir / FILE_NAME if (project_dir / FILE_NAME).is_file() else None) if project_dir else find_project_file(cwd)
        if project is not None:
            layers.append(LayerFile(project, "project"))
    if environ.get(CONFIG_ENV):
        layers.append(LayerFile(Path(environ[CONFIG_ENV]), "env", must_exist=True))
    if extra:
        layers.append(LayerFile(Path(extra), "config", must_exist=True))
    return _without_repeats(layers)


def _without_repeats(layers: list[LayerFile]) -> list[LayerFile]:
    """Each file read once, at its lowest place, as its owner's: run from ``$HOME`` the
    project file is ``~/.primus.yaml``, and a project file named by ``--config`` is one
    the user chose: both are the user's, not project files."""
    kept: dict[Path, LayerFile] = {}
    for layer in layers:
        key = layer.path.resolve() if layer.path.exists() else layer.path
        first = kept.get(key)
        if first is None:
            kept[key] = layer
        elif first.project and not layer.project:
            kept[key] = LayerFile(first.path, layer.kind, first.must_exist or layer.must_exist)
    return list(kept.values())
