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
As git's ``safe.directory`` does it, a project file or a repository marker (``.git``)
owned by another user (root excepted), or in a directory every user may write to, is
nobody's project of yours: it is not loaded, and the command says why (exit 2). A
relative ``$PRIMUS_RUNNER_CONFIG`` names a file of whatever directory the command runs
in: it is a project file, not the user's.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, NamedTuple

from runner.errors import ConfigError, Problem

FILE_NAME = ".primus.yaml"
CONFIG_ENV = "PRIMUS_RUNNER_CONFIG"
CHECKOUT_FILE = "runner/.primus.yaml"
DIRECT_SCRIPT = "runner/primus-cli-direct.sh"


class LayerFile(NamedTuple):
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


def not_yours(path: Path) -> str | None:
    """Why ``path`` cannot be a file of your project (None: it can): another user owns it
    (root excepted), or every user may write to its directory."""
    try:
        owner = os.lstat(path).st_uid
        directory = os.stat(path.parent).st_mode
    except OSError:
        return None  # gone since it was found: reading it reports that
    if owner not in (os.getuid(), 0):
        return f"it is owned by {_user_name(owner)}, not by you"
    if directory & 0o002:
        return f"its directory {path.parent} is writable by every user"
    return None


def refuse_if_not_yours(path: Path, what: str) -> None:
    """The ``safe.directory`` rule for one project file or marker: exit 2, saying why and how to allow it."""
    why = not_yours(path)
    if why is not None:
        raise ConfigError(Problem(
            f"{what} {path} is not loaded: {why} (anyone who can write there would configure your runs)",
            hint=f"if it is yours to use: chown {_user_name(os.getuid())} {path} in a directory only you can write to, "
                 f"or name the file you mean with --config FILE; otherwise remove it or run from another directory"))


def _user_name(uid: int) -> str:
    import pwd

    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def repository_root(here: Path) -> Path | None:
    """The first directory from ``here`` up that holds ``.git``."""
    return next((d for d in (here, *here.parents) if (d / ".git").exists()), None)


def find_project_file(cwd: Path) -> Path | None:
    """``.primus.yaml`` here, else in the nearest parent up to the repository root."""
    here = Path(os.path.abspath(cwd))
    if (here / FILE_NAME).is_file():
        return here / FILE_NAME
    root = repository_root(here)
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
            refuse_if_not_yours(checkout / CHECKOUT_FILE, "the Primus checkout's file")
            layers.append(LayerFile(checkout / CHECKOUT_FILE, "checkout"))
        home = Path.home() / FILE_NAME
        if home.is_file():
            layers.append(LayerFile(home, "user"))
        project = (project_dir / FILE_NAME if (project_dir / FILE_NAME).is_file() else None) if project_dir else find_project_file(cwd)
        if project is not None:
            if os.path.abspath(project) not in _named(extra, environ):  # a file you named is yours to use
                here = Path(os.path.abspath(cwd))
                if project.parent != here:  # found above: the marker made it the project's
                    refuse_if_not_yours(repository_root(here) / ".git", "the repository marker")
                refuse_if_not_yours(project, "the project file")
            layers.append(LayerFile(project, "project"))
    named = environ.get(CONFIG_ENV)
    if named and os.path.isabs(os.path.expanduser(named)):
        layers.append(LayerFile(Path(os.path.expanduser(named)), "env", must_exist=True))
    elif named:  # relative: a file of whatever directory this runs in, so the directory's, not yours
        relative = Path(os.path.abspath(cwd / named))
        if relative.exists():
            refuse_if_not_yours(relative, f"${CONFIG_ENV}'s file")
        layers.append(LayerFile(relative, "project", must_exist=True))
    if extra:
        layers.append(LayerFile(Path(extra), "config", must_exist=True))
    return _without_repeats(layers)


def _named(extra: str | None, environ: Mapping[str, str]) -> set[str]:
    """The files the user named: ``--config`` and an absolute ``$PRIMUS_RUNNER_CONFIG``."""
    named = [extra, environ.get(CONFIG_ENV) if os.path.isabs(os.path.expanduser(environ.get(CONFIG_ENV) or "")) else None]
    return {os.path.abspath(os.path.expanduser(n)) for n in named if n}


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
