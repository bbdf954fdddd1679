"""The common front half of every command: config + env file + flags -> plan and secret scope.

Also installs the scope's masker for everything printed afterwards, so from this
point on no secret value in scope can reach the terminal.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Sequence

from runner.config import Config, _merge, load_config
from runner.envfile import EnvFile, load_env_file
from runner.options import LaunchFlags, Sources
from runner.plan import LaunchPlan, Planned, build_plan
from runner.secrets import Secret, SecretScope, secret_scope
from runner.ui import Output


@dataclass(frozen=True)
class Context:
    """A command's configuration without a launch: merged config, env file, secret scope."""

    config: Config
    env_file: EnvFile
    scope: SecretScope


def load_context(sources: Sources, extra: Sequence[tuple[str, Secret]] = ()) -> Context:
    """Config, env file and every secret in scope (host env + env file + ``extra``), for
    commands that print or scan but launch nothing (build, audit, logs)."""
    from runner.policy import Classifier

    env_file = load_env_file(sources.env_file)
    config = load_config(sources.config_file)
    scope = secret_scope([os.environ, env_file.values], Classifier.from_config(config).is_secret, extra=extra)
    return Context(config, env_file, scope)


@dataclass
class Prepared:
    config: Config
    env_file: EnvFile
    planned: Planned

    @property
    def plan(self) -> LaunchPlan:
        return self.planned.require()

    @property
    def scope(self) -> SecretScope:
        return self.planned.scope


def prepare(
    out: Output,
    sources: Sources,
    command: Sequence[str],
    flags: LaunchFlags = LaunchFlags(),
    extra_layer: dict | None = None,
    extra_env: Sequence[tuple[str, str]] = (),
    quiet: bool = False,
    user_files: bool = True,
) -> Prepared:
    env_file = load_env_file(sources.env_file)
    layer = flags.config_layer()
    if extra_layer:  # a command's own layer (demo): below the flags
        layer = _merge(extra_layer, layer, (), {}, {})
    config = load_config(sources.config_file, layer or None, user_files=user_files)
    planned = build_plan(config, command, dict(os.environ), env_file, flags, extra_env=extra_env)
    out.use_masker(planned.scope.masker)
    from runner import ci

    ci.register_masks(planned.scope.values())
    if not quiet:
        for warning in planned.warnings:
            out.warn(warning)
        if planned.plan:
            for notice in planned.plan.notices:
                out.notice(notice)
    return Prepared(config, env_file, planned)
