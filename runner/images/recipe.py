"""Recipe resolution: which Dockerfile, context, base, tag, build args, secrets and labels.

``resolve_build`` decides the whole build without contacting the daemon or
writing anything, so ``--dry-run`` prints exactly what would be sent. Two kinds
of build: the project's recipes (``images/<flavor>/Dockerfile``, context
``images/`` so ``common/`` is shared, the host's CA bundle staged) and a user's
own Dockerfile (``--file PATH [--context DIR]``, or ``images.file`` /
``images.context`` in config).

Secret safety before anything starts, every problem at once (exit 2): a build
arg whose NAME is a secret, whose value holds a secret in scope, or a URL with
a password is refused (build args are recorded in the image history); every
``--secret NAME`` must have a value in the environment or the env file.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from pathlib import Path
from typing import Iterable, Mapping

from runner import __version__
from runner.errors import ConfigError, Problem, UsageError
from runner.options import BuildOptions
from runner.secrets import Secret
from runner.git import git_each
from runner.images.context import context_files, recipe_hash, refuse_env_file, refuse_secret_content
from runner.images.spec import (  # noqa: F401  (re-exported: the recipe's names)
    FLAVORS, DEFAULT_BASES, DEFAULT_TAG, USER_TAG, CA_NAME, STAGED_DOCKERFILE, SYSTEM_CA, PIP_KEYS, PROXY_ARGS, SECRET_FIX,
    L_SOURCE, L_REVISION, L_CREATED, L_BASE, L_FLAVOR, L_VERSION, L_RECIPE, L_BUILD_KEY, BuildSpec, BuildResult,
)

# ------------------------------------------------------------------ config

def recipes_dir(config) -> Path:
    """``images.dir`` from config (a directory with ``<flavor>/Dockerfile``), else the shipped recipes."""
    from runner.resources import images_dir

    custom = config.get("images", "dir") if config is not None else None
    return Path(custom).expanduser().resolve() if custom else images_dir()


def default_flavor(config) -> str:
    gpu = config.get("container", "gpu") if config is not None else None
    return gpu if gpu in FLAVORS else "rocm"


def secret_names(opts: BuildOptions, config) -> tuple[str, ...]:
    """``--secret NAME`` (repeatable) plus config ``images.secrets``, in order, once each."""
    names = list(opts.secrets) + list((config.get("images", "secrets") if config is not None else None) or [])
    bad = [n for n in names if not n or not n.replace("_", "a").isalnum() or n[0].isdigit()]
    if bad:
        raise UsageError(f"--secret '{bad[0]}' is not a variable name", hint="give the NAME of a variable set in your shell or env file: --secret HF_TOKEN")
    return tuple(dict.fromkeys(names))


def secret_values(names: Iterable[str], host_env: Mapping[str, str], env_values: Mapping[str, str | None]) -> list[tuple[str, Secret]]:
    """Each named secret's value (environment first, then the env file); every missing name at once (exit 2)."""
    found: list[tuple[str, Secret]] = []
    missing: list[str] = []
    for name in names:
        value = host_env.get(name) or env_values.get(name)
        if value:
            found.append((name, Secret(value)))
        else:
            missing.append(name)
    if missing:
        raise ConfigError(
            [Problem(f"build secret {name} has no value: it is set neither in the environment nor in the env file") for name in missing],
            hint="export " + " ".join(f"{n}=..." for n in missing) + " or add them to the env file (.env or --env-file); nothing was built",
        )
    return found


# ------------------------------------------------------------------ build args

_ARG = re.compile(r"^\s*ARG\s+([A-Za-z_][A-Za-z0-9_]*)", re.M | re.I)


def declared_args(dockerfile: str) -> set[str]:
    """The names a Dockerfile declares with ``ARG``: the build args it takes."""
    return set(_ARG.findall(dockerfile))


def parse_build_args(specs: Iterable[str], host_env: Mapping[str, str]) -> list[tuple[str, str]]:
    """``K=V`` pairs; a bare ``K`` takes the host's value, like ``docker build``."""
    pairs: list[tuple[str, str]] = []
    for spec in specs:
        key, sep, value = spec.partition("=")
        if not key or not key.replace("_", "a").isalnum():
            raise UsageError(f"--build-arg '{key or spec}' is not NAME=VALUE", hint="e.g. --build-arg TRACKERS=mlflow-skinny")
        if not sep:
            if key not in host_env:
                raise UsageError(f"--build-arg {key} has no value and {key} is not set", hint=f"give it as --build-arg {key}=VALUE")
            value = host_env[key]
        pairs.append((key, value))
    return pairs


def url_has_password(value: str) -> bool:
    for part in value.split():
        try:
            parsed = urllib.parse.urlsplit(part)
        except ValueError:
            continue
        if parsed.scheme and parsed.netloc and "@" in parsed.netloc and parsed.password:
            return True
    return False


def check_build_args(pairs: list[tuple[str, str]], classifier, masker) -> None:
    """Refuse every build arg that would record a secret in the image history (exit 2, all at once)."""
    problems: list[Problem] = []
    for key, value in pairs:
        if classifier.is_secret(key):
            problems.append(Problem(f"--build-arg {key}: {key} is classified secret; build args are recorded in the image history", hint=SECRET_FIX.replace("NAME", key)))
        elif masker and masker.contains_secret(value.encode("utf-8", "surrogateescape")):
            problems.append(Problem(f"--build-arg {key}: its value contains the value of a secret in scope", hint=SECRET_FIX))
        elif url_has_password(value):
            problems.append(Problem(f"--build-arg {key}: the URL embeds a password, which would be recorded in the image history", hint=SECRET_FIX.replace("NAME", key)))
    if problems:
        raise ConfigError(problems)


# ------------------------------------------------------------------ host pip settings

def _pip_config_files(home: Path, host_env: Mapping[str, str]) -> list[Path]:
    """pip's own config search order, lowest first (site config is skipped: no venv here).

    ``PIP_CONFIG_FILE=/dev/null`` means no config file at all, as for pip itself.
    """
    if host_env.get("PIP_CONFIG_FILE") == os.devnull:
        return []
    xdg_dirs = host_env.get("XDG_CONFIG_DIRS", "/etc/xdg").split(":")
    files = [Path(d) / "pip" / "pip.conf" for d in reversed(xdg_dirs) if d]
    files += [Path("/etc/pip.conf"), home / ".pip" / "pip.conf", Path(host_env.get("XDG_CONFIG_HOME") or home / ".config") / "pip" / "pip.conf"]
    if host_env.get("PIP_CONFIG_FILE") and host_env["PIP_CONFIG_FILE"] != os.devnull:
        files.append(Path(host_env["PIP_CONFIG_FILE"]))
    return files


def host_pip_settings(host_env: Mapping[str, str], home: Path | None = None,
                      config_files: bool = True) -> tuple[dict[str, str], str | None, list[str]]:
    """(build args, CA file, notes) from the host's pip config and environment (its config files
    only with ``config_files``).

    Only settings that work inside the build container are forwarded: http(s)
    index URLs, trusted hosts, timeouts. Host paths (``file://`` indexes,
    ``find-links``, constraint files) cannot be reached from a build and are
    left out with a note; an index URL with a password is left out with a
    warning (it would be recorded in the image history; ``--secret`` carries it).
    """
    home = home or Path.home()
    merged: dict[str, str] = {}
    origin: dict[str, str] = {}
    present = [p for p in _pip_config_files(home, host_env) if p.exists()] if config_files else []
    for path in present:
        import configparser  # only when the host has a pip config file

        parser = configparser.RawConfigParser()
        try:
            if not parser.read(path, encoding="utf-8"):
                continue
        except (configparser.Error, OSError, UnicodeDecodeError):
            continue
        for section in ("global", "install"):
            if parser.has_section(section):
                for key, value in parser.items(section):
                    merged[key] = value.strip()
                    origin[key] = str(path)
    for key in list(PIP_KEYS) + ["cert"]:
        env = "PIP_" + key.upper().replace("-", "_")
        if host_env.get(env):
            merged[key] = host_env[env]
            origin[key] = f"${env}"
    args: dict[str, str] = {}
    notes: list[str] = []
    for key, arg in PIP_KEYS.items():
        if key not in merged or not merged[key]:
            continue
        value = " ".join(merged[key].split())
        if key.endswith("url"):
            urls = value.split()
            remote = [u for u in urls if u.startswith(("http://", "https://"))]
            if len(remote) < len(urls):
                notes.append(f"pip {key} from {origin[key]}: host-local entries are not reachable from a build and are left out")
            if any(url_has_password(u) for u in remote):
                notes.append(f"warning: pip {key} from {origin[key]} embeds a password; not forwarded (it would be recorded in the image history); build with --secret {arg} to use it")
                continue
            value = " ".join(remote)
        if value:
            args[arg] = value
    ca = None
    for candidate in (host_env.get("PIP_CERT"), merged.get("cert"), host_env.get("REQUESTS_CA_BUNDLE"), host_env.get("SSL_CERT_FILE"), SYSTEM_CA):
        if candidate and os.path.isfile(candidate):
            ca = candidate
            break
    for name in PROXY_ARGS:
        if host_env.get(name):
            args[name] = host_env[name]
    return args, ca, notes


# ------------------------------------------------------------------ provenance

def provenance(context: Path) -> tuple[str, str]:
    """(source, revision): the repository URL without credentials (else the path) and the last
    commit that touched the context (stable while other files change, so rebuilds stay cached)."""
    source = f"file://{context}"
    url, revision = git_each(context, ("remote", "get-url", "origin"), ("log", "-1", "--format=%H", "--", "."))  # runner.git
    if url:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme and "@" in parts.netloc:
            url = urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
        source = url
    return source, revision or "unknown"


# ------------------------------------------------------------------ resolve

def _locate(opts: BuildOptions, config) -> tuple[str | None, Path, str, str | None]:
    """(flavor, context, dockerfile relative to it, dockerfile source outside it)."""
    user_file = opts.file or (config.get("images", "file") if config is not None and not opts.flavor else None)
    if not user_file:
        flavor = opts.flavor or default_flavor(config)
        if flavor not in FLAVORS:
            raise UsageError(f"unknown flavor '{flavor}'", hint="use --flavor rocm or --flavor cuda")
        context = recipes_dir(config)
        dockerfile = f"{flavor}/Dockerfile"
        if not (context / dockerfile).is_file():
            raise ConfigError(Problem(f"no recipe {context / dockerfile}", hint="set images.dir to a directory with <flavor>/Dockerfile, or reinstall primus-runner"))
        return flavor, context, dockerfile, None
    context = Path(opts.context or (config.get("images", "context") if config is not None else None) or ".").expanduser().resolve()
    path = Path(user_file).expanduser().resolve()
    if not context.is_dir():
        raise UsageError(f"build context {context} is not a directory", hint="pass --context DIR (default: the current directory)")
    if not path.is_file():
        raise UsageError(f"no Dockerfile at {path}", hint="pass --file PATH to your Dockerfile")
    try:
        return None, context, path.relative_to(context).as_posix(), None
    except ValueError:
        return None, context, STAGED_DOCKERFILE, str(path)


def _tag(opts: BuildOptions, config, flavor: str | None, context: Path) -> str:
    if flavor is None:
        name = "".join(c if c.isalnum() or c in "._-" else "-" for c in context.name.lower()).strip(".-_") or "image"
        return opts.tag or USER_TAG.format(name=name)
    section = (config.get("images", flavor) if config is not None else None) or {}
    tag = opts.tag or section.get("tag") or DEFAULT_TAG
    return tag.replace("{flavor}", flavor).replace("{version}", __version__)


def resolve_build(opts: BuildOptions, context_info, host_env: Mapping[str, str] | None = None) -> BuildSpec:
    """Decide the whole build from the options and ``runner.session.prepare.Context``: no daemon contact, nothing written."""
    from runner.policy import Classifier

    config, masker = context_info.config, context_info.scope.masker
    host_env = dict(os.environ if host_env is None else host_env)
    flavor, context, dockerfile, outside = _locate(opts, config)
    secrets = secret_names(opts, config)
    notes: list[str] = []

    pairs = parse_build_args(opts.build_args, host_env)
    check_build_args(pairs, Classifier.from_config(config), masker)
    base = opts.base
    if flavor is not None:
        section = (config.get("images", flavor) if config is not None else None) or {}
        base = base or section.get("base") or DEFAULT_BASES[flavor]
    declared = declared_args((Path(outside) if outside else context / dockerfile).read_text(encoding="utf-8", errors="replace"))
    # pip's config counts for the project's recipes (their CA bundle) and a Dockerfile that takes a pip setting.
    uses_pip = flavor is not None or not declared.isdisjoint(PIP_KEYS.values())
    pip_args, ca, pip_notes = host_pip_settings(host_env, config_files=uses_pip)
    notes += [n for n in pip_notes if not any(f"--secret {name}" in n for name in secrets)]  # already given as a secret
    if base and not any(k == "BASE_IMAGE" for k, _ in pairs):
        pairs.insert(0, ("BASE_IMAGE", base))
    elif any(k == "BASE_IMAGE" for k, _ in pairs):
        base = next(v for k, v in pairs if k == "BASE_IMAGE")
    given = {k for k, _ in pairs} | set(secrets)  # a name given as a secret is never also a build arg
    # The host's pip settings only where the Dockerfile asks for them (the proxies are Docker's own args).
    pairs += [(k, v) for k, v in pip_args.items() if k not in given and (k in declared or k in PROXY_ARGS)]

    files = context_files(context, dockerfile)
    refuse_env_file(context, files, context_info.env_file.path)
    refuse_secret_content(context, files, masker, [outside] if outside else [])
    if flavor is not None:
        files = [f for f in files if f != CA_NAME]  # the runner's own staged copy wins
    digest = recipe_hash(context, files, outside)
    source, revision = provenance(context)
    labels: list[tuple[str, str]] = [(L_SOURCE, source), (L_REVISION, revision)]
    if base:
        labels.append((L_BASE, base))
    if flavor is not None:
        labels.append((L_FLAVOR, flavor))
    labels += [(L_VERSION, __version__), (L_RECIPE, digest)]
    return BuildSpec(
        flavor=flavor, context_dir=str(context), dockerfile=dockerfile, base=base, tag=_tag(opts, config, flavor, context),
        build_args=tuple(pairs), labels=tuple(labels), files=tuple(files), ca_source=ca if flavor is not None else None,
        recipe_hash=digest, no_cache=opts.no_cache, notes=tuple(notes), secrets=secrets, dockerfile_source=outside,
        stage_ca=flavor is not None,
    )
