"""The Primus launcher's modes run: ``container``, ``slurm``, ``direct``.

``primus-cli [--config F] [--debug] [--dry-run] MODE [options] -- <Primus args>``
works with ``primus-runner`` in place of ``primus-cli``: ``runner.cli.launcher_args``
parses it as the launcher does and ``runner.cli.launcher_translate`` makes it
``ModeOptions``; here each mode becomes the house's own launch: ``RunOptions`` and an
engine, through ``pipeline.run``.

- ``container``: one container (the Docker engine), whose command is the Primus
  direct launcher with the Primus args.
- ``slurm sbatch``: submitted like ``submit``; ``slurm srun`` (the default) like
  ``submit --wait``. Each node runs the container entry.
- ``direct``: the Primus direct launcher as a child process on this host (the
  process engine), with the same environment policy and masked output.

The inner command is found as the launcher finds it: the Primus checkout is
``$PRIMUS_PATH`` when set, else the current directory when it holds
``runner/primus-cli-direct.sh``; with a checkout the command is
``bash runner/primus-cli-direct.sh <args>`` run in it (a container mounts it at
the same path); without one, ``primus-cli direct -- <args>``. ``container.entry``
and ``direct.entry`` in the config replace that entry point.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Mapping, Sequence

from runner.commands import launcher_direct
from runner.errors import UsageError
from runner.options import LaunchFlags, ModeOptions, RunOptions
from runner.ui import Output, launcher_text

DIRECT_SCRIPT = "runner/primus-cli-direct.sh"
ENTRIES = ("container", "direct")


def find_checkout(environ: Mapping[str, str], cwd: str) -> str | None:
    """The Primus checkout: ``$PRIMUS_PATH``, else ``cwd`` when it holds the direct launcher."""
    if environ.get("PRIMUS_PATH"):
        return os.path.abspath(environ["PRIMUS_PATH"])
    return os.path.abspath(cwd) if (Path(cwd) / DIRECT_SCRIPT).is_file() else None


def inner_command(primus_args: Sequence[str], checkout: str | None, entry: Sequence[str] | None,
                  on_host: bool, direct_args: Sequence[str] = ()) -> tuple[tuple[str, ...], str | None]:
    """The command that runs the Primus args, and the directory it runs in.

    The script path is absolute (a container mounts the checkout at its own path), so
    neither ``--workdir`` nor the runner's working directory can break it. ``direct_args``
    (the launcher's ``--single``, ``--patch`` …) go to the direct launcher before ``--``;
    on a host (``direct``) the ``--`` is always there, as ``primus-cli direct -- ARGS``
    hands it over, so ARGS reach Primus unchanged (``--help`` included)."""
    if entry:  # the user's own entry point: the Primus args appended to it
        return tuple(entry) + ((*direct_args, "--", *primus_args) if direct_args else tuple(primus_args)), checkout
    args = (*direct_args, "--", *primus_args) if direct_args or on_host else tuple(primus_args)
    if checkout:
        return ("bash", os.path.join(checkout, DIRECT_SCRIPT), *args), checkout
    return ("primus-cli", "direct", *direct_args, "--", *primus_args), None


def mode_switches(opts: ModeOptions) -> tuple[bool, bool, dict]:
    """``dry_run`` and ``debug``: the command line, or ``main.*`` / the mode's own section in
    the merged config (``main.dry_run: true`` launches nothing). Also the entry point."""
    from runner.config import load_config

    config = load_config(opts.sources.config_file, opts.flags.config_layer() or None, trust_project=opts.sources.trust_project)
    section = "direct" if opts.mode == "direct" or opts.entry == "direct" else "container"
    from runner.config.switches import launcher_switch

    flag = lambda key: launcher_switch(config, key)  # noqa: E731  main, container, slurm or direct
    entry = config.get(section, "entry", default=None)
    direct_env = [str(e) for e in (config.get("direct", "env", default=[]) or [])] if section == "direct" else []
    found = {"entry": entry, "direct_env": direct_env, "engine": config.get("container", "engine", default="auto"),
             "direct_args": [], "env_defaults": []}
    if not entry:  # the direct launcher runs: the direct: keys reach it as it takes them (a user's entry gets none)
        on_host = section == "direct"
        reads = launcher_direct.own_file(find_checkout(os.environ, os.getcwd()), os.environ.get("HOME"), on_host)
        found["direct_args"] = launcher_direct.section_args(config, reads)
        if opts.mode == "direct":  # on Slurm each node's agent computes them
            found["env_defaults"] = launcher_direct.env_defaults(config, os.environ, opts.flags.env)
    return opts.dry_run or flag("dry_run"), opts.debug or flag("debug"), found


def run(out: Output, *, opts: ModeOptions) -> int:
    """One launcher invocation, translated and run; the job's exit code (or the runner's)."""
    from runner.session import pipeline
    from runner.engines import engine_for

    dry_run, debug, found = mode_switches(opts)
    # `slurm … -- direct`: each node runs the direct launcher on its host (the checkout on a shared file system)
    on_host = opts.mode == "direct" or (opts.mode == "slurm" and opts.entry == "direct")
    checkout = find_checkout(os.environ, os.getcwd())
    command, workdir = inner_command(opts.primus_args, checkout, found["entry"], on_host, (*found["direct_args"], *opts.direct_args))
    if not opts.primus_args:
        raise UsageError("no Primus arguments given",
                         hint=f"put them after --, e.g. primus-runner {opts.mode} -- train pretrain --config exp.yaml")
    flags = _flags(opts, checkout, workdir, debug, on_host)
    if opts.mode == "slurm" and opts.entry == "direct" and flags.gpu is None:
        flags = replace(flags, gpu="none")  # no container: the host's own devices, nothing to map
    if found["direct_env"] or found["env_defaults"]:  # the launcher's direct.env: forwarded like --env, under the same policy
        flags = replace(flags, env=tuple(found["env_defaults"]) + tuple(found["direct_env"]) + flags.env)
    if not on_host:
        flags = _image_from_environment(flags, os.environ, out)
        if checkout is None and not found["entry"]:
            out.notice("no Primus checkout here (PRIMUS_PATH is unset and this directory has no runner/primus-cli-direct.sh): "
                       "the image's own primus-cli runs, without a checkout's code or its runner/.primus.yaml; "
                       "set PRIMUS_PATH=/path/to/Primus (or run from the checkout) to mount one")
    run = RunOptions(command=command, sources=opts.sources, flags=flags, dry_run=dry_run, pull=opts.pull,
                     detach=(opts.mode == "slurm" and opts.launcher == "sbatch") or (opts.mode == "container" and opts.detach),
                     engine_flags=opts.engine_flags)
    for notice in opts.notices:
        out.notice(notice)
    if opts.clean:
        _clean(opts, out, dry_run, found["engine"])
    engine = {"container": "docker", "slurm": "slurm", "direct": "process"}[opts.mode]
    if debug:
        out.info(launcher_text.DEBUG_LINE)
    if not dry_run:
        return pipeline.run(run, engine_for(engine), out)
    out.info(launcher_text.would_execute(command))
    code = pipeline.run(run, engine_for(engine), out)
    out.info(launcher_text.DRY_RUN_LINE)
    return code


def _flags(opts: ModeOptions, checkout: str | None, workdir: str | None, debug: bool, on_host: bool) -> LaunchFlags:
    flags = opts.flags
    env = list(flags.env)
    if debug:  # the launcher's --debug
        env.append("PRIMUS_LOG_LEVEL=DEBUG")
    volume = list(flags.volume)
    if checkout and not on_host and not any(_mounts_at(v, checkout) for v in volume):
        volume.append(f"{checkout}:{checkout}")  # the checkout at the same path, as the launcher mounts it
    gpu, gpus = flags.gpu, opts.gpus if opts.gpus is not None else flags.gpus
    if gpus is not None and str(gpus).strip() == "0" and gpu is None:
        gpu, gpus = "none", None  # primus-cli's --gpus 0: no GPU devices
    return replace(flags, env=tuple(env), volume=tuple(volume), workdir=flags.workdir or workdir, gpu=gpu, gpus=gpus,
                   host_process=on_host)


def _image_from_environment(flags: LaunchFlags, environ: Mapping[str, str], out: Output) -> LaunchFlags:
    """The launcher's exported ``DOCKER_IMAGE``: the image, over the config's; the command line's
    ``--image`` still wins (what was typed beats what was exported), and a notice says which."""
    image = environ.get("DOCKER_IMAGE", "").strip()
    if not image:
        return flags
    if flags.image is not None and flags.image != image:
        out.notice(f"DOCKER_IMAGE={image} is set, but --image {flags.image} on the command line wins")
        return flags
    out.notice(f"image {image} from DOCKER_IMAGE (as primus-cli takes it; --image on the command line beats it)")
    return replace(flags, image=image)


def _mounts_at(spec: str, checkout: str) -> bool:
    """Whether a ``--volume`` already mounts the checkout at its own path. The same source at
    another target (``<checkout>:/data``) is a second mount: both are kept."""
    parts = spec.split(":")
    source = os.path.abspath(os.path.expanduser(parts[0])) if "/" in parts[0] else parts[0]
    target = parts[1] if len(parts) > 1 and parts[1] else source
    return source.rstrip("/") == checkout.rstrip("/") and os.path.normpath(target) == os.path.normpath(checkout)


def _clean(opts: ModeOptions, out: Output, dry_run: bool, preference: str) -> None:
    """``--clean``: the invoking user's runner containers (every user's with ``--all-users``),
    never any other container, and nothing in a dry run."""
    from runner.clients.engine_api.shared import engine_client
    from runner.engines.containers import managed, owner_filter, remove_containers, would_remove

    eng = engine_client(preference)  # the first call chooses the engine (container.engine) for the whole process
    if dry_run:
        out.info("--clean (dry run): " + would_remove(managed(eng, owner_filter(opts.all_users))))
        return
    count = remove_containers(owner_filter(opts.all_users), eng)
    out.info(f"--clean: removed {count} primus-runner container{'s' if count != 1 else ''}")
