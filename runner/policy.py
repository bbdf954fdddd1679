"""The env passthrough policy: which host variables reach the job, and which are secrets.

Every variable the runner considers gets one ``EnvDecision`` saying whether it
is forwarded, why, where its value came from, and whether it is a secret. This
is the one place a name is classified.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Iterable, Mapping, NamedTuple

from runner.config import ENV_PATH, Config
from runner.errors import Problem
from runner.secrets import Secret
from runner.secrets.masker import MIN_SECRET_LEN
from runner.secrets.names import NAME_RE, is_runner_variable

CLI_WHERE = "command line (--env)"
# The skip reason of an env file entry nothing asked for (reported, names only, like an unset name).
ENV_FILE_ONLY = "only in the env file, not allowlisted"


# The runner's own settings (and a Slurm node agent's masks): they configure the runner, never a job.
RUNNER_OWN = "PRIMUS_RUNNER_"
MIN_PREFIX_LEN = 3  # "" or "P" forwards (nearly) the whole host environment
BROAD_PREFIX_SHARE = 0.5  # a prefix that matches more than half of a (non-tiny) environment is refused


class Classifier(NamedTuple):
    """Secret and deny classification from policy data (names and shell patterns).

    ``passthrough.secrets`` holds names and patterns of secrets; an entry ``!NAME``
    marks one exact name public although a pattern matches it (a known look-alike
    such as ``HF_HUB_DISABLE_IMPLICIT_TOKEN``). ``!`` never overrides a name listed
    exactly, and an ``!`` entry with a wildcard is ignored: a repository's
    ``.primus.yaml`` cannot unmark ``HF_TOKEN`` or ``*_TOKEN``.
    """

    secret_patterns: tuple[str, ...]
    deny: frozenset[str]
    prefixes: tuple[str, ...]
    public: frozenset[str] = frozenset()

    @classmethod
    def from_config(cls, config: Config) -> "Classifier":
        return cls.from_entries(
            config.get("passthrough", "secrets", default=[]) or [],
            deny=config.get("passthrough", "deny", default=[]) or [],
            prefixes=config.get("passthrough", "prefixes", default=[]) or [],
        )

    @classmethod
    def from_entries(cls, secrets: Iterable, deny: Iterable[str] = (), prefixes: Iterable[str] = ()) -> "Classifier":
        """From ``passthrough.secrets`` entries as written (also before a config can be merged: the early scope)."""
        entries = [str(e) for e in secrets]
        patterns = tuple(e for e in entries if not e.startswith("!"))
        exact = {p.upper() for p in patterns if not any(c in p for c in "*?[")}
        public = frozenset(
            name for name in (e[1:].strip().upper() for e in entries if e.startswith("!"))
            if name and not any(c in name for c in "*?[") and name not in exact
        )
        return cls(secret_patterns=patterns, deny=frozenset(deny), prefixes=tuple(prefixes), public=public)

    def is_secret(self, name: str) -> bool:
        upper = name.upper()
        if upper in self.public:
            return False
        # a name without a wildcard is compared, not matched: fnmatch compiles a regex for each pattern it sees
        return any(fnmatchcase(upper, p.upper()) if any(c in p for c in "*?[") else upper == p.upper() for p in self.secret_patterns)

    def is_denied(self, name: str) -> bool:
        """On ``passthrough.deny``, or a variable that configures the runner itself (whatever the rules say)."""
        return name in self.deny or is_runner_variable(name)

    def prefix_of(self, name: str) -> str | None:
        return next((p for p in self.prefixes if name.startswith(p)), None)


def prefix_problems(config: Config, host_env: Mapping[str, str]) -> list[Problem]:
    """``passthrough.prefixes`` entries that are empty, too short or match most of the environment."""
    problems = []
    names = [n for n in host_env if NAME_RE.match(n)]
    for i, prefix in enumerate(config.get("passthrough", "prefixes", default=[]) or []):
        where = config.where(("passthrough", "prefixes", i))
        prefix = str(prefix)
        if len(prefix.strip()) < MIN_PREFIX_LEN or prefix != prefix.strip():
            problems.append(Problem(
                f"passthrough.prefixes: a prefix must be at least {MIN_PREFIX_LEN} characters without spaces "
                "(an empty or one-letter prefix forwards most of the host environment)",
                where=where, hint="use a specific prefix such as PRIMUS_ or NCCL_, or list names in container.options.env"))
            continue
        matched = sum(1 for n in names if n.startswith(prefix))
        if len(names) >= 20 and matched > BROAD_PREFIX_SHARE * len(names):
            problems.append(Problem(
                f"passthrough.prefixes: this prefix matches {matched} of the {len(names)} host variables; "
                "a prefix this broad forwards most of the host environment",
                where=where, hint="use a more specific prefix, or list names in container.options.env"))
    return problems


@dataclass(frozen=True)
class EnvDecision:
    """What happens to one variable. ``value`` is a ``Secret`` for secret names."""

    name: str
    forwarded: bool
    secret: bool
    reason: str  # why it was considered: allowlist, prefix NCCL_, required, tracker wandb, ...
    source: str | None = None  # env, env-file, literal, config, computed
    value: str | Secret | None = None
    skip_reason: str | None = None
    where: str | None = None


class Wanted(NamedTuple):
    """A name something other than the allowlist asks for (a tracker, a computed setting)."""

    name: str
    reason: str
    required: bool = False
    value: str | None = None  # a value the runner computed from the config (tracker settings)


class EnvResolution:
    def __init__(self):
        self.decisions: list[EnvDecision] = []
        self.problems: list[Problem] = []
        self.warnings: list[str] = []

    @property
    def forwarded(self) -> list[EnvDecision]:
        return [d for d in self.decisions if d.forwarded]

    @property
    def skipped(self) -> list[EnvDecision]:
        return [d for d in self.decisions if not d.forwarded]


def resolve_env(
    config: Config,
    host_env: Mapping[str, str],
    env_file: Mapping[str, str | None],
    env_file_name: str | None = None,
    cli_env: Iterable[str] = (),
    wanted: Iterable[Wanted] = (),
    host_process: bool = False,
) -> EnvResolution:
    """Apply the passthrough rules of the contract to the host environment.

    Values come from the process environment first, then the env file. The
    steps run in the contract's order: the allowlist (config layers and
    ``--env``), then required and tracker-wanted names, then prefix rules.
    ``host_process``: the job runs on this host (``direct``), which already has the names
    the deny list keeps out of containers (``PATH``, ``HOME`` …): listing one is no error.
    """
    resolver = _Resolver(config, host_env, env_file, env_file_name, host_process)
    resolver.result.problems += prefix_problems(config, host_env)
    resolver.refuse_direct_env_literals()
    resolver.allowlist(cli_env)
    required = resolver.required_and_wanted(list(wanted))
    resolver.prefixes()
    resolver.env_file_leftovers()
    resolver.result.decisions = list(resolver.decided.values())
    resolver.report_missing(required)
    return resolver.result


class _Resolver:
    """The state of one ``resolve_env``: what is decided so far and what is wrong."""

    def __init__(self, config: Config, host_env: Mapping[str, str], env_file: Mapping[str, str | None], env_file_name: str | None,
                 host_process: bool = False):
        self.config = config
        self.host_process = host_process
        self.host_env = host_env
        self.env_file = env_file
        self.env_file_name = env_file_name
        self.classifier = Classifier.from_config(config)
        self.result = EnvResolution()
        self.decided: dict[str, EnvDecision] = {}

    def lookup(self, name: str) -> tuple[str | None, str | None]:
        if name in self.host_env:
            return self.host_env[name], "env"
        value = self.env_file.get(name)
        if value is not None:
            return value, f"env-file {self.env_file_name}" if self.env_file_name else "env-file"
        return None, None

    def decide(self, name: str, reason: str, where: str | None, literal: str | None = None, literal_source: str = "literal") -> None:
        secret = self.classifier.is_secret(name)
        value, source = (literal, literal_source) if literal is not None else self.lookup(name)
        if value is None:
            self.decided[name] = EnvDecision(name, False, secret, reason, skip_reason="unset", where=where)
            return
        if "\x00" in value:
            self.result.problems.append(Problem(f"the value of {name} ({source}) contains a NUL byte, which no environment can hold", where=where))
            return
        if secret and len(value.encode("utf-8", "surrogateescape")) < MIN_SECRET_LEN:
            self.result.warnings.append(
                f"{name} is a secret by its name, but its value is too short to mask ({MIN_SECRET_LEN} bytes or more): "
                f"it is forwarded and not masked in output; if it is not a secret, add '!{name}' to passthrough.secrets")
        self.decided[name] = EnvDecision(name, True, secret, reason, source, Secret(value) if secret else value, where=where)

    def refuse_direct_env_literals(self) -> None:
        """``direct.env`` (the Primus launcher's direct mode) is refused like ``container.options.env``."""
        for i, entry in enumerate(self.config.get("direct", "env", default=[]) or []):
            name, sep, _ = str(entry).partition("=")
            if sep and self.classifier.is_secret(name.strip()):
                self.result.problems.append(Problem(
                    f"{name.strip()} is a secret but has a literal value in the config (direct.env[{i}])",
                    where=self.config.where(("direct", "env", i)),
                    hint=f"list just '{name.strip()}' in container.options.env and set its value in the environment or the env file"))

    def allowlist(self, cli_env: Iterable[str]) -> None:
        """1. The allowlist, from every config layer and ``--env`` flags."""
        entries = [(entry, self.config.where(ENV_PATH + (i,))) for i, entry in enumerate(self.config.get(*ENV_PATH, default=[]) or [])]
        entries += [(entry, CLI_WHERE) for entry in cli_env]
        for entry, where in entries:
            cli = where == CLI_WHERE
            name, sep, literal = entry.partition("=")
            name = name.strip()
            if not NAME_RE.match(name):
                label = "--env" if cli else "container.options.env"  # merged lists: the line says which entry
                self.result.problems.append(  # the entry is not shown: it may be a value pasted in place of a name
                    Problem(f"{label}: invalid environment variable name (the entry is not shown)", where=where,
                            hint="write NAME or NAME=value; names are letters, digits and _, not starting with a digit"))
            elif self.classifier.is_denied(name) and not self.host_process:
                self.result.problems.append(
                    Problem(f"{name} is on the deny list and is never forwarded", where=where, hint="remove it from the env list"))
            elif sep and self.classifier.is_secret(name):
                self.result.problems.append(Problem(  # a value on the command line is in `ps` and shell history: refused like YAML
                    f"{name} is a secret but has a literal value " + ("on the command line" if cli else "in the config"),
                    where=where,
                    hint=(f"pass just --env {name}" if cli else f"list just '{name}'") + " and set its value in the environment or the env file",
                ))
            else:
                self.decide(name, "allowlist", where, literal if sep else None)

    def required_and_wanted(self, wanted: list[Wanted]) -> list[tuple[str, str, str | None]]:
        """2. Names required by the config or by enabled trackers; tracker settings. Returns the required names."""
        required = []
        for i, n in enumerate(self.config.get("passthrough", "required", default=[]) or []):
            where = self.config.where(("passthrough", "required", i))
            if not NAME_RE.match(str(n)):  # not echoed: it may be a value pasted in place of a name
                self.result.problems.append(Problem("passthrough.required: invalid environment variable name (the entry is not shown)",
                                                    where=where, hint="names are letters, digits and _, not starting with a digit"))
                continue
            required.append((n, "required", where))
        for want in wanted:
            if want.required:
                required.append((want.name, want.reason, None))
            if want.name in self.decided and self.decided[want.name].forwarded:
                continue
            if want.value is not None:  # an explicit config setting beats the host's value
                self.decide(want.name, want.reason, None, want.value, "config")
            elif want.name not in self.decided or want.required:
                self.decide(want.name, want.reason, None)
        for name, reason, where in required:
            if name not in self.decided and not self.classifier.is_denied(name):
                self.decide(name, reason, where)
        return required

    def prefixes(self) -> None:
        """3. Prefix rules: never a secret, never a denied name, never an invalid name."""
        for name in sorted(self.host_env):
            if name in self.decided or not NAME_RE.match(name):
                continue
            prefix = self.classifier.prefix_of(name)
            if prefix is None:
                continue
            reason = f"prefix {prefix}"
            if name.startswith(RUNNER_OWN):
                self.decided[name] = EnvDecision(name, False, False, reason, skip_reason=f"configures primus-runner ({RUNNER_OWN}*)")
            elif self.classifier.is_denied(name):
                self.decided[name] = EnvDecision(name, False, False, reason, skip_reason="denied by policy")
            elif self.classifier.is_secret(name):
                self.decided[name] = EnvDecision(name, False, True, reason, skip_reason="secret: prefixes never forward secrets; list it by name to forward it")
            else:
                self.decide(name, reason, None)

    def env_file_leftovers(self) -> None:
        """4. Env file entries nothing forwards: said, never silently dropped (prefix rules
        forward host variables only; a value in the env file is forwarded when listed)."""
        for name in sorted(self.env_file):
            if name not in self.decided and NAME_RE.match(name):
                self.decided[name] = EnvDecision(name, False, self.classifier.is_secret(name), "env file", skip_reason=ENV_FILE_ONLY)

    def report_missing(self, required: list[tuple[str, str, str | None]]) -> None:
        """Every required name that is not forwarded, in one problem."""
        missing = sorted({name for name, _, _ in required if not (name in self.decided and self.decided[name].forwarded)})
        if missing:
            why = {name: reason for name, reason, _ in reversed(required)}
            listed = ", ".join(f"{n} ({why[n]})" for n in missing)
            self.result.problems.append(Problem(
                f"missing required variable{'s' if len(missing) > 1 else ''}: {listed}",
                hint="export them or put them in the env file (.env or --env-file); nothing was launched",
            ))
