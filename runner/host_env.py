"""The environment of a job that runs as a host process (``direct``, here and on each Slurm node).

The Primus launcher runs its direct script with the user's whole shell environment: ``PATH``,
``HOME``, a venv, conda and module variables, library paths, ``ROCM_HOME``. A direct job
gets the same, by one rule written here and used by planning, the process engine and each
Slurm node's agent: the user's environment, minus every secret the policy does not forward
and the variables that configure the runner itself, plus the forwarded variables (which win)
and the computed ones. ``direct.clean_env: true`` gives only the forwarded names.

The deny list is a container's rule (what must not cross into an image); a host process
already runs with its ``PATH``, ``HOME`` and ``LD_LIBRARY_PATH``, so it does not strip them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Iterable, Mapping

from runner.policy import RUNNER_OWN, Classifier

WITHHELD_SECRET = "withheld: a secret by its name (passthrough.secrets); --env NAME forwards it"
WITHHELD_RUNNER = f"withheld: configures primus-runner ({RUNNER_OWN}*)"


@dataclass(frozen=True)
class Withheld:
    name: str
    reason: str


@dataclass(frozen=True)
class HostEnv:
    """What a host process inherits from the user's environment, and what it does not (names and why)."""

    inherited: tuple[tuple[str, str], ...]
    withheld: tuple[Withheld, ...]


def host_environment(user_env: Mapping[str, str], forwarded: Collection[str], secret_rules: Iterable[str]) -> HostEnv:
    """The user's variables a host process inherits: every one the policy does not forward itself
    (``forwarded``: those names are the plan's), less the secrets ``secret_rules`` (the
    ``passthrough.secrets`` entries) name and the runner's own settings."""
    classifier = Classifier.from_entries(secret_rules)
    inherited, withheld = [], []
    for name in sorted(user_env):
        if name in forwarded:
            continue
        if name.startswith(RUNNER_OWN):
            withheld.append(Withheld(name, WITHHELD_RUNNER))
        elif classifier.is_secret(name):
            withheld.append(Withheld(name, WITHHELD_SECRET))
        else:
            inherited.append((name, user_env[name]))
    return HostEnv(tuple(inherited), tuple(withheld))
