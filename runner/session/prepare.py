"""The common front half of every command: config + env file + flags -> plan and secret scope.

Also installs the scope's masker for everything printed afterwards, so from this
point on no secret value in scope can reach the terminal.
"""

from __future__ import annotations

import os
from typing import Sequence

from runner.config import Config, _merge, load_config, load_env_and_config
from runner.config.envfile import EnvFile, env_lookup
from runner.context import Context, load_context, secret_refs  # noqa: F401  (Context, load_context: re-exported)
from runner.options import LaunchFlags, Sources
from runner.launch_plan import LaunchPlan
from runner.plan import Planned, build_plan
from runner.secrets import SecretScope
from runner.ui import Output


class Prepared:
    def __init__(self, config: Config, env_file: EnvFile, planned: Planned):
        self.config, self.env_file, self.planned = config, env_file, planned

    @property
    def plan(self) -> LaunchPlan:
        return self.planned.require()

    @property
    def scope(self) -> SecretScope:
        return self.planned.scope

    def lookup(self, name: str) -> str | None:
        """A variable's value as the runner sees it: the environment first, then the env file."""
        return env_lookup(self.env_file)(name)


def _gpu_holders(config: Config):
    """Who holds which GPU now, asked only when a launch selects GPUs: the engine's runner
    containers (when it answers; a read, nothing changes) and the launches in progress."""

    def held() -> dict[str, str]:
        from runner.errors import EngineUnavailable
        from runner.gpus import holders

        try:
            from runner.clients.engine_api.shared import engine_client

            return holders.current(engine_client(config.get("container", "engine", default="auto")))
        except (EngineUnavailable, OSError):
            return holders.current(None)

    return held


def _lazy_mask(config: Config, host_env: dict, env_file: EnvFile):
    """The mask for a failing reference's message (the secrets of the environment and env file),
    built only if one fails."""
    def mask(text: str) -> str:
        from runner.policy import Classifier
        from runner.secrets import secret_scope

        return secret_scope([host_env, env_file.values], Classifier.from_config(config).is_secret).masker.mask(text)

    return mask


def _references(refs: dict, host_env: dict, env_file: EnvFile, resolved: "dict | None | bool", mask):
    """The planner's ``references`` callback: the references of the names a launch considers,
    resolved in parallel and in memory only (a reference wins over the environment); with
    ``resolved=False`` (``plan``, dry runs) none is run and each value is a stand-in that says
    where it would come from; a dict is values a caller resolved itself (``check``)."""

    def references(considered: set[str]) -> tuple[dict, list, dict]:
        from runner.secrets.refs.resolve import resolve

        needed = [ref for name, ref in refs.items() if name in considered]
        if not needed:
            return {}, [], {}
        if resolved is False:
            return {ref.name: f"<{ref.name} from {ref.source}, not resolved>" for ref in needed}, [], {ref.name: ref.source for ref in needed}
        if resolved is None:
            lookup = env_lookup(env_file, host_env)
            values = resolve(needed, lookup, mask=mask)
        else:
            values = {ref.name: resolved[ref.name] for ref in needed if ref.name in resolved}
        # An in-memory hand-over to the planner, like os.environ itself: it wraps each value in a
        # Secret again, and nothing here is written, logged or put on a command line.
        plain = {name: secret.reveal() for name, secret in values.items()}
        return plain, list(values.items()), {ref.name: ref.source for ref in needed if ref.name in values}

    return references


def unset_notice(names) -> str:
    return f"not set on this host, not forwarded: {', '.join(names)}"


def load_sources(sources: Sources, flags: LaunchFlags = LaunchFlags(), extra_layer: dict | None = None,
                 user_files: bool = True) -> tuple[EnvFile, Config]:
    """The env file and the merged config, the flags' layer on top (a command's own layer, the demo's, below them)."""
    layer = flags.config_layer()
    if extra_layer:
        layer = _merge(extra_layer, layer, (), {}, {})
    return load_env_and_config(sources, layer or None, user_files=user_files)


def prepare(
    out: Output,
    sources: Sources,
    command: Sequence[str],
    flags: LaunchFlags = LaunchFlags(),
    extra_layer: dict | None = None,
    extra_env: Sequence[tuple[str, str]] = (),
    quiet: bool = False,
    user_files: bool = True,
    resolved: dict | None = None,
    report_unset: bool = True,
    resolve_refs: bool | None = True,
    gpu_mode: str = "host",
    loaded: tuple[EnvFile, Config] | None = None,
    run_id: str | None = None,
) -> Prepared:
    """Config, env file, flags → the plan and its secret scope; installs the scope's masker.

    Secret references the launch needs are resolved here, once; ``resolved`` gives values
    a caller already resolved itself (``check`` resolves and reports every reference).
    ``report_unset=False``: no notice for unset allowlisted names (``plan`` lists them itself).
    ``resolve_refs=False`` (``plan``, dry runs) runs no reference: the plan shows where
    each value would come from; ``None``: the same when the config sets ``dry_run: true``.
    ``gpu_mode``: "node" when each Slurm node chooses its GPUs (nothing is chosen here),
    "off" for a launch without a container; else ("host") ``--gpus N`` is previewed against
    the GPUs other runner containers hold now (the launch claims them for real, under a
    lock: ``runner.gpus.holders.claim``). ``loaded``: what ``load_sources`` gave a caller
    that read the config first (``check``), so it is loaded once per command."""
    env_file, config = loaded or load_sources(sources, flags, extra_layer, user_files)
    host_env = dict(os.environ)
    refs = secret_refs(config)
    if resolve_refs is None:  # a launch: run the references unless the config asks for a dry run
        from runner.config.switches import launcher_switch

        resolve_refs = not launcher_switch(config, "dry_run")
    references = None
    if refs:  # a name given a reference is a secret whatever its name: added to the loaded config, not loaded again
        passthrough = config.data.setdefault("passthrough", {})
        passthrough["secrets"] = list(dict.fromkeys([*(passthrough.get("secrets") or []), *sorted(refs)]))
        references = _references(refs, host_env, env_file, resolved if resolve_refs else False, _lazy_mask(config, host_env, env_file))
    gpu_args = {"gpu_holders": _gpu_holders(config) if gpu_mode == "host" else None, "gpu_mode": gpu_mode}
    planned = build_plan(config, command, host_env, env_file, flags, extra_env=extra_env, references=references, run_id=run_id,
                         **gpu_args)
    from runner.engines import config_problems

    planned.problems += config_problems(config)  # the engines' own sections (slurm:), as a launch checks them
    out.use_masker(planned.scope.masker)
    from runner.ui import ci

    ci.register_masks(planned.scope.values())
    if not quiet:
        _report(planned, out, report_unset)
    elif planned.absent_optional:
        out.debug("optional tracker variables not set: " + ", ".join(planned.absent_optional))
    return Prepared(config, env_file, planned)


def _report(planned, out: Output, report_unset: bool) -> None:
    """The plan's warnings and notices, each once."""
    if planned.absent_optional:  # optional tracker variables simply not set: noise unless asked for
        out.debug("optional tracker variables not set: " + ", ".join(planned.absent_optional))
    for warning in dict.fromkeys(planned.warnings):
        out.warn(warning)
    if planned.plan:
        for notice in dict.fromkeys(planned.plan.job.notices):
            out.notice(notice)
        if planned.unset and report_unset:
            out.notice(unset_notice(planned.unset))
        if planned.unset_launcher and report_unset:
            out.notice(f"{planned.unset_launcher} names the launcher's runner/.primus.yaml allowlists are not set here, "
                       "not forwarded (primus-runner plan lists them)")
