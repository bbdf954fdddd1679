"""``primus-runner build`` and ``up --build``: images with no secret baked in.

Modules by concern: ``recipe`` (which Dockerfile, context, base, tag, build
args, secret names, labels), ``context`` (``.dockerignore``, context hygiene,
the tar), ``builder`` (classic Engine API, BuildKit through a CLI, Podman),
``stream`` (the build stream and its progress display), ``scan`` (the
post-build scan of config, history and layers). This module holds the command
entry points only; it takes ``runner.options.BuildOptions``, never argparse.
"""

from __future__ import annotations

import os
from pathlib import Path

from runner.options import BuildOptions, Sources
from runner.ui import Output


def _load(opts: BuildOptions, out: Output | None = None):
    """(context, build secrets): config, env file and the secret scope (``secrets:`` references
    resolved, so the context scan and the output know their values), the build's ``--secret``
    values in it (a reference serves one too); every missing secret name exits 2 here, before
    anything is built."""
    from runner.images.recipe import secret_names, secret_values
    from runner.context import load_context, secret_refs

    context = load_context(opts.sources, out=out)
    in_scope = dict(context.scope.named)
    referenced = [(name, in_scope[name]) for name in secret_refs(context.config) if name in in_scope]
    values = {**os.environ, **{name: secret.reveal() for name, secret in referenced}}  # a reference wins, as at launch
    secrets = secret_values(secret_names(opts, context.config), values, context.env_file.values)
    values.clear()
    if secrets:  # their values join the scope (masked, refused in build args, scanned for), whatever their names
        context = load_context(opts.sources, extra=[*secrets, *referenced])
    return context, secrets


def _prepare(opts: BuildOptions, out: Output, masker=None):
    """(spec, secrets, the stream's and scan's masker, context): everything decided, nothing contacted."""
    from runner.images.recipe import resolve_build

    context, secrets = _load(opts, out)
    if masker is None:  # build: the scope's masker is THE masker for everything printed
        masker = context.scope.masker
        out.use_masker(masker)
    elif secrets:  # up --build: the launch's masker stays on ``out`` (the job's output); the build's
        masker = context.scope.masker  # stream and scan also cover its --secret values
    spec = resolve_build(opts, context)
    for note in spec.notes:
        out.warn(note.removeprefix("warning: ")) if note.startswith("warning:") else out.debug(note)
    return spec, secrets, masker, context


def _preference(context) -> str:
    return _preference_of(context.config)


def _build(spec, opts: BuildOptions, out: Output, secrets, masker, context, engine=None):
    """Connect, pick the builder for that engine, build. Exit 1 when the engine or a needed builder is missing."""
    from runner.images.builder import choose
    from runner.images.stream import connect, run_build

    engine = engine or connect(_preference(context))
    builder = choose(spec, engine.kind, remember=True)  # a build: its probes are kept (a dry run keeps nothing)

    from runner.config.envfile import env_lookup

    lookup = env_lookup(context.env_file)  # registry credentials for the base's pull
    return run_build(spec, out, masker, builder=builder, secrets=secrets, engine=engine, pull=opts.pull, lookup=lookup)


def cmd_build(opts: BuildOptions, out: Output) -> int:
    """``primus-runner build``: 0 built, 1 no engine/builder, 2 refused before anything started, 3 build failed."""
    spec, secrets, masker, context = _prepare(opts, out)
    if opts.dry_run or _dry_run_switch(context.config):
        from runner.errors import EngineUnavailable
        from runner.images.builder import choose

        try:  # without contacting the engine: the configured one (Docker unless container.engine says podman)
            builder = choose(spec, "podman" if _preference(context) == "podman" else "docker")
        except EngineUnavailable as exc:
            builder = exc
        if out.json_mode:
            out.json({**spec.to_dict(), "builder": _builder_dict(spec, builder)})
        else:
            out.result(render_spec(spec, builder))
        return 0
    result = _build(spec, opts, out, secrets, masker, context)
    pushed = _push(result.tag, context, out) if opts.push else None
    if out.json_mode:
        out.json({**result.to_dict(), **({"pushed": pushed} if pushed is not None else {})})
    else:
        out.info(f"built {result.tag} in {result.seconds:.1f}s with the {result.builder} builder: {result.steps} steps, {result.cache_hits} cached, {result.ran} run")
        if pushed is not None:
            out.info(f"pushed {result.tag}" + (f" ({pushed})" if pushed else ""))
        out.result(f"{result.image_id} {result.tag}")
    return 0


def _push(tag: str, context, out: Output) -> str:
    """``build --push``: the tag to its registry, with the credentials a pull of it would use."""
    from runner.clients.engine_api.push import push
    from runner.config.envfile import env_lookup
    from runner.images.stream import connect

    return push(connect(_preference(context)), tag, env_lookup(context.env_file), out)


def ensure_image(image: str, out: Output, *, flavor: str | None = None, sources: Sources | None = None, masker=None) -> None:
    """``up --build`` / ``submit --build``: build ``image`` when it is not present locally.

    The recipe follows the caller's ``--config``/``--env-file`` (``sources``) and
    ``--gpu`` (``flavor``): a config naming ``images.file`` builds that Dockerfile,
    else ``images/<flavor>/``. ``masker`` is the launch's (it knows every secret in
    scope); build secrets (``images.secrets``) join the build's own scope.
    """
    from runner.images.recipe import FLAVORS
    from runner.images.scan import inspect_image
    from runner.images.stream import connect
    from runner.context import load_context

    sources = sources or Sources()
    config = load_context(sources).config
    engine = connect(_preference_of(config))
    if inspect_image(engine, image) is not None:
        return
    user_file = config.get("images", "file") if config is not None else None
    opts = BuildOptions(sources=sources, flavor=flavor if flavor in FLAVORS and not user_file else None, tag=image)
    spec, secrets, scan_masker, context = _prepare(opts, out, masker)
    what = spec.dockerfile_path() if spec.user_dockerfile else f"{spec.context_dir}/{spec.dockerfile} (base {spec.base})"
    out.notice(f"image {image} is not present locally; building it from {what}")
    result = _build(spec, opts, out, secrets, scan_masker, context, engine)
    out.info(f"built {result.tag} ({result.image_id[:19]}) in {result.seconds:.1f}s")


def _dry_run_switch(config) -> bool:
    """A launcher section's ``dry_run: true``, read from the config the build loaded (one load per command)."""
    from runner.config.switches import launcher_switch

    return launcher_switch(config, "dry_run")


def _preference_of(config) -> str:
    return (config.get("container", "engine") if config is not None else None) or "auto"


def builder_status(engine: str | None = None) -> dict:
    """For ``check``: which builder is available and what BuildKit needs when none is.
    ``engine``: ``docker`` or ``podman`` (``Engine.kind``), as ``check`` found it."""
    from runner.images.builder import builder_status as status

    return status(engine)


def planned_builder(config, engine: str | None) -> str:
    """For ``check``: the builder ``build`` would use for the configured recipe or Dockerfile (its own
    decision, ``builder.decide``), described; or why there is none."""
    from runner.errors import RunnerError
    from runner.images.builder import decide
    from runner.images.recipe import _locate, secret_names

    try:
        flavor, context, dockerfile, outside = _locate(BuildOptions(), config)
        path = Path(outside) if outside else context / dockerfile
        return decide(path, secret_names(BuildOptions(), config), flavor is None, engine).describe()
    except RunnerError as exc:
        return f"none ({exc.message})"


def _builder_dict(spec, builder) -> dict:
    from runner.images.builder import render_command

    if isinstance(builder, Exception):
        return {"kind": None, "unavailable": builder.message, "needs": builder.hint, "secrets": list(spec.secrets)}
    command = None
    if builder.kind != "classic":
        from runner.images.recipe import L_BUILD_KEY, L_CREATED

        labels = {**dict(spec.labels), L_CREATED: "<when built>", L_BUILD_KEY: "<build key>"}
        command = render_command(builder, builder.command(spec, labels, "<iidfile>"), spec.secrets)
    return {"kind": builder.kind, "describe": builder.describe(), "secrets": list(spec.secrets), "command": command}


def render_spec(spec, builder=None) -> str:
    from runner.images.recipe import CA_NAME, L_CREATED

    info = _builder_dict(spec, builder) if builder is not None else None
    lines = [
        f"flavor:     {spec.flavor or '(your Dockerfile)'}",
        f"context:    {spec.context_dir} ({len(spec.files)} files{' + ' + CA_NAME if spec.stage_ca else ''})",
        f"dockerfile: {spec.dockerfile_path() if spec.dockerfile_source else spec.dockerfile}",
        f"base:       {spec.base or '(from the Dockerfile)'}",
        f"tag:        {spec.tag}",
    ]
    if spec.stage_ca:
        lines.append(f"ca bundle:  {spec.ca_source or '(none: empty file staged)'} -> {CA_NAME}")
    lines.append(f"no-cache:   {str(spec.no_cache).lower()}")
    if info is not None:
        lines.append(f"builder:    {info.get('describe') or 'none: ' + str(info.get('unavailable'))}")
        if info.get("needs"):
            lines.append(f"  needs:    {info['needs']}")
    lines.append(f"secrets:    {', '.join(spec.secrets) or '(none)'}" + ("  (values from the environment or env file, never shown)" if spec.secrets else ""))
    if info is not None and info.get("command"):
        lines.append(f"command:    {info['command']}")
    lines += ["build args:", *[f"  {k}={v}" for k, v in spec.build_args], "labels:", *[f"  {k}={v}" for k, v in spec.labels], f"  {L_CREATED}=(set when built)"]
    return "\n".join(lines)
