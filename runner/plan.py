"""Planning: everything a launch will do (a ``runner.launch_plan.LaunchPlan``), decided without side effects.

``build_plan`` reads config, environment and flags and touches nothing: no
daemon, no network, no file written. ``plan``, ``check`` and ``--dry-run``
render its result, so what they print is exactly what would run.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import posixpath
import re
from dataclasses import replace
from typing import Callable, Mapping, Sequence

from runner import __version__
from runner.config import Config
from runner.config.container_values import parse_bytes, parse_device, parse_entrypoint, parse_label, parse_platform, parse_ulimit
from runner.config.envfile import EnvFile, env_lookup
from runner.errors import ConfigError, Problem
from runner.launch_plan import LABEL, LABEL_JOB, LABEL_OWNER, LABEL_VERSION, ContainerSpec, JobSpec, LaunchPlan, Mount  # noqa: F401  (LABEL_VERSION: for its importers)
from runner.gpus import host_root
from runner.options import LaunchFlags
from runner.policy import Classifier, EnvDecision, resolve_env
from runner.resources import policies_dir
from runner.secrets import Secret, SecretScope, secret_scope
from runner.secrets.names import NAME_RE
from runner.trackers.config import analyze_trackers, job_lookup, literal_values

# Docker's image reference grammar (distribution/reference): anything else -- a
# space, ';', '$(', a backtick, upper case in the path -- is refused before any
# engine call, so an image name can never smuggle in a flag or a shell word.
_DOMAIN_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_PATH_PART = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN = rf"(?:(?:localhost|{_DOMAIN_PART}(?:\.{_DOMAIN_PART})+)(?::[0-9]+)?|{_DOMAIN_PART}:[0-9]+)"
IMAGE_RE = re.compile(
    rf"(?:{_DOMAIN}/)?{_PATH_PART}(?:/{_PATH_PART})*"
    r"(?::[\w][\w.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?",
    re.ASCII,
)

class Planned:
    """The outcome of planning: a plan (when nothing is wrong) and everything found."""

    def __init__(self, plan: LaunchPlan | None, problems: list[Problem] | None = None, warnings: list[str] | None = None,
                 scope: SecretScope | None = None, absent_optional: list[str] | None = None, unset: list[str] | None = None,
                 unset_launcher: int = 0):
        self.plan = plan
        self.problems = [] if problems is None else problems
        self.warnings = [] if warnings is None else warnings
        self.scope = SecretScope() if scope is None else scope  # every secret value in scope, and the one masker
        self.absent_optional = [] if absent_optional is None else absent_optional  # optional tracker names not set (--verbose)
        # Names the user's own files or flags allowlist that are not set here: worth one notice at launch
        # (the built-in defaults' names, and names an engine computes, are not: the plan still lists them).
        self.unset = [] if unset is None else unset
        self.unset_launcher = unset_launcher  # how many names only the launcher's own runner/.primus.yaml allowlists are not set (one line)

    def require(self) -> LaunchPlan:
        if self.problems or self.plan is None:
            raise ConfigError(self.problems)
        return self.plan


def _as_list(value) -> list[str]:
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _as_bool(value) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == "true")


@functools.lru_cache(maxsize=1)
def _gpu_policy() -> dict:
    from runner.config.yamlsource import load_yaml

    return load_yaml(policies_dir() / "gpu.yaml", "built-in GPU policy").data


def _volume(spec: str, where: str | None, problems: list[Problem]) -> Mount | None:
    parts = spec.split(":")
    if len(parts) > 3 or not parts[0]:
        problems.append(Problem(f"volume '{spec}' is not SRC[:DST[:OPTS]]", where=where))
        return None
    src = parts[0]
    dst = parts[1] if len(parts) > 1 and parts[1] else None
    mode = parts[2] if len(parts) > 2 else "rw"
    named = "/" not in src and not src.startswith((".", "~"))
    if not named:
        src = os.path.abspath(os.path.expanduser(src))
        if not os.path.exists(src):
            problems.append(Problem(f"volume source {src} does not exist", where=where, hint="create it or fix the path"))
            return None
    target = posixpath.normpath(dst) if dst else (src if not named else None)
    if target is None or not target.startswith("/"):
        problems.append(Problem(f"volume '{spec}': the container path must be absolute", where=where))
        return None
    if any(opt not in {"ro", "rw", "z", "Z", "shared", "slave", "private", "rshared", "rslave", "rprivate", "nocopy", "delegated", "cached", "consistent"} for opt in mode.split(",")):
        problems.append(Problem(f"volume '{spec}': unknown option '{mode}'", where=where, hint="use ro or rw"))
        return None
    return Mount(src, target, mode, named)


def from_defaults(where: str | None) -> bool:
    """Whether a ``file:line`` is in the built-in defaults (not something the user asked for)."""
    return bool(where) and str(where).rsplit(":", 1)[0] == str(policies_dir() / "defaults.yaml")


def from_launcher_file(where: str | None) -> bool:
    """Whether a ``file:line`` is in a Primus checkout's own ``runner/.primus.yaml`` (the
    launcher's system defaults, not something the user asked for)."""
    from runner.config.layers import CHECKOUT_FILE

    return bool(where) and str(where).rsplit(":", 1)[0].endswith("/" + CHECKOUT_FILE)


def flavor_devices(gpu: str) -> list[str]:
    """The devices a GPU flavor itself needs (``/dev/kfd``, ``/dev/dri`` for ROCm)."""
    return list((_gpu_policy()["flavors"].get(gpu) or {}).get("devices", []))


def _resolve_devices(config: Config, gpu: str, notices: list[str]) -> tuple[list[str], str | None, list[str]]:
    policy = _gpu_policy()
    flavor = policy["flavors"][gpu] or {}
    gpu_device = lambda d: any(fnmatch.fnmatchcase(d, p) for p in policy["gpu_devices"])  # noqa: E731
    wanted = list(flavor.get("devices", []))
    for device in _as_list(config.get("container", "options", "device")):
        if gpu_device(device) and device not in flavor.get("devices", []):
            continue  # another flavor's GPU device
        if device not in wanted:
            wanted.append(device)
    listed = _as_list(config.get("container", "options", "device"))
    devices = []
    for device in wanted:
        if device in policy["optional_devices"] and not os.path.exists(device.split(":")[0]):
            where = config.where(("container", "options", "device", listed.index(device))) if device in listed else None
            if gpu != "none" and where and not from_defaults(where) and not from_launcher_file(where):  # the user asked for RDMA
                notices.append(f"{device} ({where}) is not present on this host; it is left out (no RDMA)")
            continue
        devices.append(device)
    return devices, flavor.get("device_request"), list(flavor.get("group_add", []))


def _per_job(name, host_env: Mapping[str, str]) -> str | None:
    """A config ``name`` with the launcher's per-job suffix (``NAME-<SLURM_JOB_ID or pid>``): two
    runs of one config never collide. A ``--name`` from the command line is used as given."""
    return f"{name}-{host_env.get('SLURM_JOB_ID') or os.getpid()}" if name else None


def default_name(run_id: str | None = None) -> str:
    """A job's name when nothing names it: the run id's own random part (``primus-3fa9c1`` for run
    ``20261201-103512-3fa9c1``), so the name, the run and its container's labels tell each other."""
    return f"primus-{run_id.rsplit('-', 1)[-1] if run_id else os.urandom(3).hex()}"


def build_plan(
    config: Config,
    command: Sequence[str],
    host_env: Mapping[str, str],
    env_file: EnvFile,
    flags: LaunchFlags = LaunchFlags(),
    name: str | None = None,
    extra_env: Sequence[tuple[str, str]] = (),
    extra_secrets: Sequence[tuple[str, Secret]] = (),
    sources: Mapping[str, str] | None = None,
    gpu_holders: Callable[[], Mapping[str, str]] | None = None,
    gpu_mode: str = "host",
    references: "Callable[[set[str]], tuple[dict, list, dict]] | None" = None,
    run_id: str | None = None,
) -> Planned:
    """Decide everything about a launch. Writes nothing and calls no engine or network;
    it reads its arguments and, for validation, whether volume sources and optional
    devices exist on this host.

    ``extra_env`` are values the runner computes itself (a Slurm node's rank,
    a tracker run id): forwarded as-is, never secrets. ``extra_secrets`` are
    secrets known by other means (resolved references): in scope, masked.
    ``sources`` names where a variable's value came from when it is not the
    environment (``HF_TOKEN`` → ``pass:ml/hf``), for ``plan`` and ``check``.
    GPUs are read from the host root (sysfs, never written); ``gpu_holders`` says which
    GPUs other jobs hold (for ``--gpus N``); ``gpu_mode`` "node": each Slurm node chooses,
    "off": no container, no GPU selection (``direct``).
    ``references(names)``: for the names the env policy considers, the values of their
    secret references (plain, for the policy), the same as secrets (for the scope) and where
    each comes from; the env policy then decides with them (the plan is built once). ``run_id``:
    the launch's run id, which a job nothing names is named after.
    """
    options = config.get("container", "options", default={}) or {}
    job_name = str(name or flags.name or _per_job(options.get("name"), host_env) or default_name(run_id))
    trackers, resolution, host_env, extra_secrets, sources = _decide_env(
        config, command, host_env, env_file, flags, job_name, references, extra_secrets, sources)
    problems, notices = [*trackers.problems, *resolution.problems], list(trackers.notices)
    warnings = [*env_file.warnings, *trackers.warnings, *resolution.warnings]
    gpu = flags.gpu or config.get("container", "gpu", default="rocm")
    container = _container_spec(config, flags, gpu, notices, problems)
    problems += _engine_value_problems(config, container)
    decisions, scope, absent_optional = _scoped_decisions(
        config, resolution.decisions, extra_env, [host_env, env_file.values], extra_secrets, sources, notices)
    unset, unset_launcher = _unset(decisions)
    problems += [*_names_holding_secrets(scope, job=job_name, run=trackers.run_name or ""), *_flags_holding_secrets(scope, flags)]
    if not command:
        problems.append(Problem("no command given", hint="put the job's command after --, e.g. primus-runner up -- python train.py"))
    job = JobSpec(command=tuple(command) + trackers.overrides, name=job_name, gpu=gpu, env=tuple(decisions), trackers=trackers,
                  workdir=options.get("workdir"), stop_timeout=float(config.get("container", "stop_timeout", default=10)),
                  **_host_process(config, flags), notices=tuple(notices), config_files=tuple(config.files))
    plan = LaunchPlan(job, replace(container, labels=_labels(flags, job_name, problems)))
    if gpu_mode != "off":
        plan = _with_gpu_selection(plan, config, flags, host_env, gpu_holders, gpu_mode == "node", problems)
    problems += _image_problems(plan.container.image, config)
    return Planned(plan, problems, warnings, scope, absent_optional, unset, unset_launcher)


def _labels(flags: LaunchFlags, job_name: str, problems: list[Problem]) -> tuple[tuple[str, str], ...]:
    """The user's ``--label``s, then the runner's own (which the user's cannot replace)."""
    return (*_user_labels(flags, problems), (LABEL, "true"), (LABEL_JOB, job_name), (LABEL_VERSION, __version__),
            (LABEL_OWNER, str(os.getuid())))


def _decide_env(config: Config, command, host_env: Mapping[str, str], env_file: EnvFile, flags: LaunchFlags, job_name: str,
                references, extra_secrets, sources):
    """The trackers' analysis and the env policy's decisions, with the values of the secret
    references those decisions consider (resolved once, then decided again with them).
    Returns them with the environment, secrets and sources the references extend."""
    trackers, resolution = _env_decisions(config, command, host_env, env_file, flags, job_name)
    if references is not None:
        # the names the policy asks for (an inherited or withheld name never runs a reference)
        values, found, found_sources = references({d.name for d in resolution.decisions if d.reason != "inherited"})
        if values:
            host_env = {**host_env, **values}
            extra_secrets = [*extra_secrets, *found]
            sources = {**(sources or {}), **found_sources}
            trackers, resolution = _env_decisions(config, command, host_env, env_file, flags, job_name)
    return trackers, resolution, host_env, extra_secrets, sources


def _unset(decisions: Sequence[EnvDecision]) -> tuple[list[str], int]:
    """The allowlisted names not set here that the user's own files or flags list (worth a notice by
    name), and how many only the launcher's own ``runner/.primus.yaml`` lists (one line)."""
    listed = [d for d in decisions if d.skip_reason == "unset" and d.reason == "allowlist" and not from_defaults(d.where)]
    unset = [d.name for d in listed if not from_launcher_file(d.where)]
    return unset, len(listed) - len(unset)


def _host_process(config: Config, flags: LaunchFlags) -> dict:
    """The plan's ``inherit_env`` and ``secret_rules``: a host process (``direct``) starts from the
    user's environment unless ``direct.clean_env: true``; the rules withhold its secrets there too."""
    inherit = flags.host_process and not _as_bool(config.get("direct", "clean_env", default=False))
    rules = tuple(str(e) for e in config.get("passthrough", "secrets", default=[]) or []) if inherit else ()
    return {"inherit_env": inherit, "secret_rules": rules}


def _with_inherited(decisions: Sequence[EnvDecision], host_env: Mapping[str, str], rules: tuple[str, ...]) -> list[EnvDecision]:
    """A host process's decisions: the policy's forwarded ones, then every other variable of the
    user's environment as inherited or withheld (``runner.host_env``), so ``plan`` lists both and
    a Slurm job exports the inherited names (their values never on a command line)."""
    from runner.host_env import host_environment  # a direct launch's only

    found = host_environment(host_env, {d.name for d in decisions if d.forwarded}, rules)
    named = [(name, value) for name, value in found.inherited if NAME_RE.match(name)]
    replaced = {name for name, _ in named} | {w.name for w in found.withheld}
    kept = [d for d in decisions if d.forwarded or d.name not in replaced]
    return [*kept, *(EnvDecision(name, True, False, "inherited", "env", value) for name, value in named),
            *(EnvDecision(w.name, False, True, "inherited", skip_reason=w.reason) for w in found.withheld)]


def _scoped_decisions(config: Config, decided: Sequence[EnvDecision], extra_env, envs: list, extra_secrets, sources,
                      notices: list[str]) -> tuple[list[EnvDecision], SecretScope, list[str]]:
    """The env decisions with the runner's computed values, the secret scope over every value
    in play (``envs``: the host's and the env file's), and the optional names simply absent."""
    computed = {key for key, _ in extra_env}
    decisions = [d for d in decided if d.name not in computed]
    decisions += [EnvDecision(key, True, False, "computed", "runner", value) for key, value in extra_env]
    scope = secret_scope(
        envs, Classifier.from_config(config).is_secret,
        public=[(d.name, d.value) for d in decisions if isinstance(d.value, str)],
        extra=[*((d.name, d.value) for d in decisions if isinstance(d.value, Secret)), *extra_secrets],
    )
    if sources:
        decisions = [replace(d, source=sources[d.name]) if d.name in sources and d.forwarded else d for d in decisions]
    decisions, absent_optional = _final_decisions(decisions, scope, notices)
    return decisions, scope, absent_optional


def _with_gpu_selection(plan: LaunchPlan, config: Config, flags: LaunchFlags, host_env: Mapping[str, str],
                        holders, per_node: bool, problems: list[Problem]) -> LaunchPlan:
    """``--gpus`` / ``container.gpus`` decided: the chosen GPUs and their devices, or the problems."""
    from runner.gpus import planning

    configured = config.get("container", "gpus", default=None)
    text = str(flags.gpus if flags.gpus is not None else configured if configured is not None else "all")
    where = None if flags.gpus is not None else config.where(("container", "gpus"))
    root = host_root(host_env)
    explicit = flags.gpus is not None or configured is not None
    gpu = plan.job.gpu
    found = planning.resolve(gpu, text, explicit, root, holders, per_node=per_node, where=where)
    problems += found.problems
    plan = replace(plan, job=replace(plan.job, gpu_select=text if gpu != "none" else "none", host_root=root))
    if found.problems or gpu == "none":
        return plan
    if found.gpus:
        plan = planning.with_gpus(plan, found.gpus, root)
        problem = planning.privileged_problem(plan.container.privileged, found.gpus, found.found,
                                              config.where(("container", "options", "privileged")))
        if problem:
            problems.append(problem)
    if found.gpus or per_node:
        problems += planning.env_problems(plan.job.env, len(found.gpus) or None)
    return plan


def _names_holding_secrets(scope: SecretScope, **names: str) -> list[Problem]:
    """A job or run name holding a secret value would name a container, a job directory and a
    tracker run: refused here, before anything is created, without repeating it."""
    shown = {"job": "the job name (--name or container.options.name)", "run": "the name of the tracker run the runner creates"}
    return [Problem(f"{shown[key]} holds a secret value", hint="choose a name that is not a secret")
            for key, value in names.items() if value and scope.masker.contains_secret(value.encode("utf-8", "surrogateescape"))]


def _user_labels(flags: LaunchFlags, problems: list[Problem]) -> tuple[tuple[str, str], ...]:
    """``--label KEY=VALUE`` checked (never one of the runner's own); later wins, as in docker."""
    labels: dict[str, str] = {}
    for spec in flags.labels:
        try:
            key, value = parse_label(spec)
        except ValueError as exc:
            problems.append(Problem(f"--label: {exc}", where="command line", hint="pass --label KEY=VALUE with a key of your own"))
            continue
        labels[key] = value
    return tuple(labels.items())


def _docker_run_flags(flags: LaunchFlags, problems: list[Problem]) -> dict:
    """``--entrypoint`` and ``--platform`` as plan fields, checked here (``plan`` reports a bad one)."""
    found: dict = {"entrypoint": None, "platform": None}
    for key, parse in (("entrypoint", parse_entrypoint), ("platform", parse_platform)):
        value = getattr(flags, key)
        if value is None:
            continue
        try:
            found[key] = parse(value)
        except ValueError as exc:
            problems.append(Problem(f"--{key}: {exc}", where="command line"))
    return found


def _flags_holding_secrets(scope: SecretScope, flags: LaunchFlags) -> list[Problem]:
    """A label, entrypoint or platform would be in ``docker inspect`` as it is: never a secret value."""
    given = [("--label", v) for v in flags.labels] + [(f"--{k}", getattr(flags, k)) for k in ("entrypoint", "platform")]
    return [Problem(f"{flag} holds a secret value (it would be in docker inspect)", where="command line",
                    hint="pass the secret by name in the job's environment (--env NAME) instead")
            for flag, value in given if value and scope.masker.contains_secret(value.encode("utf-8", "surrogateescape"))]


def _env_decisions(config: Config, command, host_env: Mapping[str, str], env_file: EnvFile, flags: LaunchFlags, job_name: str):
    """The trackers' analysis and the env policy's decisions for these values."""
    lookup = env_lookup(env_file, host_env)
    trackers = analyze_trackers(config, job_lookup(literal_values(config, flags.env), lookup), command, default_run_name=job_name)
    resolution = resolve_env(config, host_env, env_file.values, env_file.path, flags.env, trackers.wanted,
                             host_process=flags.host_process)
    host = _host_process(config, flags)
    if host["inherit_env"]:
        resolution.decisions = _with_inherited(resolution.decisions, host_env, host["secret_rules"])
    return trackers, resolution


def _final_decisions(decisions: list[EnvDecision], scope: SecretScope, notices: list[str]) -> tuple[list[EnvDecision], list[str]]:
    """Carry embedded secrets as secrets and drop optional names that are simply absent (they are
    not worth a line in ``plan``; ``--verbose`` lists them)."""
    decisions, carried = _carry_embedded_secrets(decisions, scope)
    absent_optional = [d.name for d in decisions if d.skip_reason == "unset" and d.reason != "allowlist"]
    decisions = [d for d in decisions if d.name not in absent_optional]
    if carried:
        notices.append(f"these public variables hold a secret value and travel as secrets (masked, through the stdin shim): {', '.join(carried)}")
    from runner.policy import ENV_FILE_ONLY

    env_file_only = [d.name for d in decisions if d.skip_reason == ENV_FILE_ONLY]
    if env_file_only:
        notices.append(f"in the env file but not allowlisted, not forwarded: {', '.join(env_file_only)} (list them in container.options.env)")
    return decisions, absent_optional


def _carry_embedded_secrets(decisions: list[EnvDecision], scope: SecretScope) -> tuple[list[EnvDecision], list[str]]:
    """A public variable whose value contains a secret (``PRIMUS_AUTH="Bearer $HF_TOKEN"``, a
    URL with a password) is forwarded as a secret: never in ``docker inspect`` or a file."""
    carried = []
    result = []
    for d in decisions:
        if d.forwarded and not d.secret and isinstance(d.value, str) and scope.masker.contains_secret(d.value.encode("utf-8", "surrogateescape")):
            d = replace(d, secret=True, value=Secret(d.value))
            carried.append(d.name)
        result.append(d)
    return result, carried


def _container_spec(config: Config, flags: LaunchFlags, gpu: str, notices: list[str], problems: list[Problem]) -> ContainerSpec:
    """The ``container:`` section and the flags as the plan's ``ContainerSpec`` (the runner's labels
    are added with the job's name); ``gpu``, the job's flavor, decides its devices."""
    options = config.get("container", "options", default={}) or {}
    devices, gpu_request, group_add = _resolve_devices(config, gpu, notices)
    gpu_groups = set(_gpu_policy().get("gpu_groups", []))
    for index, group in enumerate(_as_list(options.get("group-add"))):
        asked = gpu == "rocm" or config.where(("container", "options", "group-add", index)) == "command line"
        if group in gpu_groups and group not in group_add and not asked:
            continue  # a ROCm group (video/render) from a file under another flavor: absent from images without a GPU stack
        if group not in group_add:
            group_add.append(group)
    mounts = []
    for index, spec in enumerate(_as_list(options.get("volume"))):
        mount = _volume(spec, config.where(("container", "options", "volume", index)), problems)
        if mount:
            mounts.append(mount)
    text = lambda key: str(options[key]) if options.get(key) is not None else None  # noqa: E731
    return ContainerSpec(
        image=str(options.get("image") or ""),
        mounts=tuple(mounts),
        devices=tuple(devices),
        gpu_request=gpu_request,
        cap_add=tuple(_as_list(options.get("cap-add"))),
        group_add=tuple(group_add),
        security_opt=tuple(_as_list(options.get("security-opt"))),
        ulimits=tuple(_as_list(options.get("ulimit"))),
        privileged=_as_bool(options.get("privileged", False)),
        hostname=text("hostname"),
        run_options=tuple(flags.run_options),
        **_docker_run_flags(flags, problems),
        ipc=options.get("ipc"),
        network=options.get("network"),
        user=text("user"),
        shm_size=text("shm-size"),
        memory=text("memory"),
        cpus=float(options["cpus"]) if options.get("cpus") is not None else None,
        secrets_via=config.get("container", "secrets_via", default="stdin"),
        pull=str(config.get("container", "pull", default=None) or "missing"),
        container_engine=str(config.get("container", "engine", default=None) or "auto"),
    )


def _engine_value_problems(config: Config, container: ContainerSpec) -> list[Problem]:
    """The values an engine parses into typed fields (sizes, ulimits, device mappings), checked
    here with their ``file:line``: a launch never reaches an engine with one it would refuse."""
    problems = []
    options = ("container", "options")
    checks = [(parse_ulimit, "ulimit", _as_list(config.get(*options, "ulimit")), True),
              (parse_device, "device", _as_list(config.get(*options, "device")), True),
              (parse_bytes, "shm-size", [container.shm_size] if container.shm_size else [], False),
              (parse_bytes, "memory", [container.memory] if container.memory else [], False)]
    for parse, key, values, listed in checks:
        for index, value in enumerate(values):
            try:
                parse(value)
            except ValueError as exc:
                where = config.where((*options, key, index) if listed else (*options, key))
                problems.append(Problem(f"container.options.{key}: {exc}", where=where))
    return problems


def _image_problems(image: str, config: Config) -> list[Problem]:
    if not image:
        return [Problem("no image set", hint="set container.options.image or pass --image")]
    if not IMAGE_RE.fullmatch(image):
        return [Problem(
            f"image {image!r} is not a valid image reference",
            where=config.where(("container", "options", "image")),
            hint="use [REGISTRY/]NAME[:TAG][@DIGEST] in lower case, e.g. rocm/primus:v26.5",
        )]
    return []
