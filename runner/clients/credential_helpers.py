"""A ``docker-credential-NAME`` program's login for one registry, asked as the Docker CLI asks:
``get`` as its argument, the server on its stdin, ``{"ServerURL", "Username", "Secret"}`` on its
stdout (``Username`` ``<token>``: the ``Secret`` is an identity token). It holds nothing for the
server: it exits non-zero saying ``credentials not found in native keychain``, or answers empty.

Run through ``runner.subprocesses.run``, as every short-lived program is: no shell, the runner's
own environment (never an env file's), its own session, bounded in time (a hung helper, or a
keychain left waiting to be unlocked, is killed: exit 1) and in output. Its stderr is kept and
never shown, its stdout (the ``Secret``) parsed and never quoted: a helper may print its answer
in either.

Which program: a plain name, found in an absolute directory of ``PATH`` and run by that path.
A name with a path in it (``"credsStore": "x/evil"``) or one a relative ``PATH`` entry (``.``,
``bin``) finds would run a program of the directory the command runs in: refused unrun (exit 2).
"""

from __future__ import annotations

import json
import os
import re
import shutil

from runner import subprocesses
from runner.errors import ConfigError, EngineUnavailable, Problem

PREFIX = "docker-credential-"
TIMEOUT = 30.0  # seconds: long enough for a keychain to be unlocked, short of a pull hanging for good
NOT_FOUND = b"credentials not found in native keychain"  # the helpers' own words (docker-credential-helpers)
TOKEN_USERNAME = "<token>"

# NAME of docker-credential-NAME: a plain name, so only PATH can resolve it.
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def login(name: str, server: str, *, config: str, registry: str) -> dict | None:
    """``{"username", "password"}`` or ``{"IdentityToken"}`` for ``server`` from the helper NAME
    that the file ``config`` names for ``registry``, or None when it holds nothing for it."""
    program = PREFIX + name
    check = f"check it with: echo {server} | {program} get"
    try:
        done = subprocesses.run([_find(name, config, registry), "get"], timeout=TIMEOUT, stdin=server.encode(),
                                label=program)
    except subprocesses.ProgramTimedOut as exc:
        raise EngineUnavailable(f"{exc.message} (the credential helper {config} names for {registry})",
                                hint=f"unlock its store, or {check}") from None
    if done.returncode != 0:
        if NOT_FOUND in done.stdout:
            return None
        how = f"was killed by signal {-done.returncode}" if done.returncode < 0 else f"exited with status {done.returncode}"
        raise _failed(program, registry, f"it {how}", check)
    try:
        answer = json.loads(done.stdout)
        user, secret = answer["Username"], answer["Secret"]
    except (ValueError, KeyError, TypeError):
        raise _failed(program, registry, "its answer is not the helper protocol's JSON", check) from None
    if not isinstance(user, str) or not isinstance(secret, str):
        raise _failed(program, registry, "its answer is not the helper protocol's JSON", check)
    if not user and not secret:
        return None
    return {"IdentityToken": secret} if user == TOKEN_USERNAME else {"username": user, "password": secret}


def _find(name: str, config: str, registry: str) -> str:
    """The helper's absolute path: a plain name, in an absolute ``PATH`` directory."""
    program = PREFIX + name
    if not _PLAIN_NAME.fullmatch(name):
        raise ConfigError(Problem(
            f"{config} names a credential helper for {registry} that is not a plain name (it is not run)",
            hint="a helper is docker-credential-NAME found on PATH, NAME of letters, digits, '.', '_' and '-'; "
                 "fix 'credsStore'/'credHelpers' in that file"))
    absolute = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if os.path.isabs(p))
    found = shutil.which(program, path=absolute)
    if found is not None:
        return found
    if shutil.which(program) is not None:
        raise ConfigError(Problem(
            f"{program} would be found through a relative PATH entry (the current directory's), so it is not run",
            hint="keep only absolute directories in PATH ('.', '' and relative entries name the current directory)"))
    raise EngineUnavailable(f"the credential helper {program} that {config} names for {registry} is not on PATH",
                            hint=f"install {program}, or remove 'credsStore'/'credHelpers' for {registry} from {config}")


def _failed(program: str, registry: str, how: str, check: str) -> ConfigError:
    return ConfigError(Problem(
        f"the credential helper {program} failed for registry {registry}: {how} "
        "(its output is not shown: it may hold the credential)", hint=check))
