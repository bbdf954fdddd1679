"""A command's configuration without a launch: merged config, env file, secret scope.

``load_context`` is what commands that print or scan but launch nothing read
(build, audit, logs); ``early_scope`` is the scope before the config is loaded
(it may be broken), so masks exist from a command's first line. Both classify
names with the one classifier, ``runner.policy.Classifier``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple, Sequence

from runner.config import Config, default_layer_paths, load_config, load_env_and_config
from runner.config.envfile import EnvFile, env_lookup, load_env_file
from runner.options import Sources
from runner.policy import Classifier
from runner.secrets import Secret, SecretScope, secret_scope
from runner.ui import Output


class Context(NamedTuple):
    """A command's configuration without a launch: merged config, env file, secret scope."""

    config: Config
    env_file: EnvFile
    scope: SecretScope


def load_context(sources: Sources, extra: Sequence[tuple[str, Secret]] = (), out: Output | None = None) -> Context:
    """Config, env file and every secret in scope (host env + env file + ``extra``).

    With ``out``, every ``secrets:`` reference is resolved too, so a value a job printed
    from a store is masked (logs) or found (audit); one that cannot be resolved is a
    warning there, not an error: those commands must still run."""
    env_file, config = load_env_and_config(sources)
    is_secret = Classifier.from_config(config).is_secret
    refs = secret_refs(config) if out is not None else {}
    if refs:
        from runner.secrets.refs.resolve import resolve_and_report

        resolved, report = resolve_and_report(list(refs.values()), env_lookup(env_file))
        for item in report:
            if not item["found"]:
                out.warn(f"secret {item['name']} ({item['source']}) could not be resolved: {item['error']}")
        extra = [*extra, *resolved.items()]
        is_secret = lambda name, base=is_secret: base(name) or name in refs  # noqa: E731
    scope = secret_scope([os.environ, env_file.values], is_secret, extra=extra)
    return Context(config, env_file, scope)


def secret_refs(config: Config) -> dict:
    """The ``secrets:`` references by name (their syntax errors stop the command, exit 2)."""
    if not config.get("secrets"):
        return {}
    from runner.errors import ConfigError
    from runner.secrets.refs.grammar import parse_refs

    refs, problems = parse_refs(config)
    if problems:
        raise ConfigError(problems)
    return {ref.name: ref for ref in refs}


def early_scope(sources: Sources) -> SecretScope:
    """The secrets in scope before the config is loaded (it may be broken).

    Classifies the environment and the env file with the classifier of the built-in
    policy plus any ``passthrough.secrets`` entries readable from the config files,
    so the masks come first even when ``load_config`` then fails. Never raises.
    """
    values: dict = {}
    try:
        values = load_env_file(sources.env_file, trust_project=True).values  # read for masks only
    except Exception:  # the env file's own problem is reported by prepare()
        pass
    # ``!NAME`` (marked public) is not honoured here: masking a look-alike early costs nothing,
    # while a ``!HF_TOKEN`` in a cloned repository's file must never unmask a real secret
    # before the trust check runs.
    classifier = Classifier.from_entries(e for e in _early_entries(sources.config_file) if not e.startswith("!"))
    return secret_scope([os.environ, values], classifier.is_secret)


def _early_entries(config_file: str | None) -> list[str]:
    """The ``passthrough.secrets`` entries of the default and config files, read one by one:
    a broken file adds nothing (load_config reports it), the others still count."""
    from runner.config.yamlsource import load_yaml  # size-limited and bounded, like load_config
    from runner.resources import policies_dir

    entries: list[str] = []
    try:
        paths = [policies_dir() / "defaults.yaml"] + [p for p, _ in default_layer_paths(config_file)]
    except Exception:
        paths = [policies_dir() / "defaults.yaml"]
    for path in paths:
        try:
            data = load_yaml(Path(path)).data if Path(path).is_file() else None  # not validated yet
            listed = (data.get("passthrough") or {}).get("secrets") if isinstance(data, dict) else None
            entries += [str(p) for p in listed or [] if isinstance(p, (str, int))]
        except Exception:
            continue
    return entries


def early_masks(command: str, sources: Sources, json_stdout: bool, out: Output) -> None:
    """First thing a command does under CI: register masks, install a masker for error paths."""
    from runner.ui import ci

    if command == "node-agent":
        ci.disable()  # runs on Slurm nodes; its output is written to log files
        return
    if command == "completion" or not (ci.github_actions() or ci.in_ci()):
        return
    ci.set_json_stdout(json_stdout)
    scope = early_scope(sources)
    if scope:
        out.use_masker(scope.masker)
    ci.register_masks(scope.values())


def container_engine(sources: Sources, config: Config | None = None) -> str:
    """``container.engine`` of this directory's config (auto | docker | podman): where ``ps``,
    ``logs``, ``down`` and ``--clean`` look, the engine ``up`` launched on."""
    if config is None:
        config = load_config(sources.config_file, trust_project=sources.trust_project)
    return config.get("container", "engine", default=None) or "auto"
