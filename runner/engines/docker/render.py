"""A ``DockerRequest`` as the ``docker run`` / ``podman run`` command that would do the same.

Rendered from the create body itself, so the dry run shows what the engine is sent:
every label, device, mount and limit. Secrets appear as ``-e NAME`` only: in the
body they are not there at all (the stdin shim carries them), or, with
``secrets_via: env``, their values are left out here. The shim is named for what
it is, not printed as a script.
"""

from __future__ import annotations

# The request type is runner.engines.docker.container.DockerRequest (not imported: it imports this module).

SHIM_TOKEN = "<stdin-shim>"


def shim_note(request: "DockerRequest") -> str:
    names = ", ".join(request.secret_names)
    tty = (request.config.get("Tty") and "turns the terminal's echo off, says it is ready, ") or ""
    then = "restores the terminal and execs the command" if tty else "exports them and execs the command"
    return (f"{SHIM_TOKEN}: the runner's /bin/sh script (runner/engines/docker/shim.py) {tty}reads {names} from the "
            f"attached stdin, {then}; their values are in no argument, no Env and no label (docker inspect shows none)")


def _host_flags(host: dict, written: dict | None = None) -> list[str]:
    """``written``: a size as the user wrote it (``64g``), shown instead of the body's bytes."""
    written = {k: v for k, v in (written or {}).items() if v}
    argv: list[str] = []
    if host.get("Init"):
        argv.append("--init")
    if host.get("Privileged"):
        argv.append("--privileged")
    for key, flag in (("CapAdd", "--cap-add"), ("GroupAdd", "--group-add"), ("SecurityOpt", "--security-opt")):
        for value in host.get(key) or ():
            argv += [flag, str(value)]
    for ulimit in host.get("Ulimits") or ():
        argv += ["--ulimit", f"{ulimit['Name']}={ulimit['Soft']}:{ulimit['Hard']}"]
    for device in host.get("Devices") or ():
        argv += ["--device", f"{device['PathOnHost']}:{device['PathInContainer']}:{device['CgroupPermissions']}"]
    for request in host.get("DeviceRequests") or ():
        if request.get("Driver") == "cdi":
            for name in request.get("DeviceIDs") or ():
                argv += ["--device", name]
        else:
            ids = request.get("DeviceIDs")
            argv += ["--gpus", "all" if request.get("Count") == -1 else (f"device={','.join(ids)}" if ids else str(request.get("Count")))]
    for bind in host.get("Binds") or ():
        argv += ["-v", bind]
    for key, flag in (("IpcMode", "--ipc"), ("NetworkMode", "--network"), ("ShmSize", "--shm-size"), ("Memory", "--memory")):
        if host.get(key) is not None:
            argv += [flag, str(written.get(key, host[key]))]
    if host.get("NanoCpus"):
        argv += ["--cpus", f"{host['NanoCpus'] / 1e9:g}"]
    if (host.get("LogConfig") or {}).get("Type"):
        argv += ["--log-driver", host["LogConfig"]["Type"]]
    return argv


def run_argv(request: "DockerRequest") -> list[str]:
    """``docker run`` (``podman run``) with every field of the create body, secrets by name."""
    options, command = _split(request)
    return options + command


def _split(request: "DockerRequest") -> tuple[list[str], list[str]]:
    """(``docker run`` and its options, the image and what follows it)."""
    body = request.config
    argv = [request.kind, "run", "--name", request.plan.job.name]
    if request.remove:
        argv.append("--rm")
    if request.detach:
        argv.append("--detach")
    if body.get("OpenStdin"):
        argv.append("--interactive")
    if body.get("Tty"):
        argv.append("--tty")
    if request.plan.container.platform:
        argv += ["--platform", request.plan.container.platform]
    for key, value in (body.get("Labels") or {}).items():
        argv += ["--label", f"{key}={value}"]
    secret = set(request.secret_names)
    for entry in body.get("Env") or ():
        name = entry.split("=", 1)[0]
        if name not in secret:
            argv += ["-e", entry]
    for name in request.secret_names:
        argv += ["-e", name]  # the value from the runner, never on this line
    argv += _host_flags(body.get("HostConfig") or {}, {"ShmSize": request.plan.container.shm_size, "Memory": request.plan.container.memory})
    if body.get("User"):
        argv += ["--user", str(body["User"])]
    if body.get("WorkingDir"):
        argv += ["--workdir", body["WorkingDir"]]
    if body.get("Hostname"):
        argv += ["--hostname", body["Hostname"]]
    passed = dict(request.plan.container.run_options)
    if body.get("StopTimeout") is not None and "stop-timeout" not in passed:
        argv += ["--stop-timeout", str(body["StopTimeout"])]
    from runner.engines.docker.run_options import argv as passthrough_argv

    argv += passthrough_argv(request.plan.container.run_options)  # as given: the create body carries each one (run_options.PASSTHROUGH)
    entrypoint = list(body.get("Entrypoint") or [])
    rest: list[str] = []
    if request.use_shim and entrypoint[:1] == ["/bin/sh"]:
        # /bin/sh -c SCRIPT primus-shim <image entrypoint…>: the script by name
        argv += ["--entrypoint", "/bin/sh"]
        rest = ["-c", SHIM_TOKEN, *entrypoint[3:]]
        if "image entrypoint" in request.pending:
            rest.append("<image-entrypoint>")
    elif entrypoint:
        argv += ["--entrypoint", entrypoint[0]]
        rest = entrypoint[1:]
    elif "Entrypoint" in body:  # --entrypoint "": the image's is cleared
        argv += ["--entrypoint", ""]
    return argv, [body["Image"], *rest, *body.get("Cmd", [])]


def run_text(request: "DockerRequest") -> str:
    """The dry-run text: the command, one option per line, then what it rests on."""
    from runner.ui.render import shell_word

    options, command = _split(request)
    quoted = [shell_word(a) for a in options]
    lines, line = [], quoted[:2]
    for token in quoted[2:]:
        if token.startswith("-") and len(line) > 1:
            lines.append(" ".join(line))
            line = [" "]
        line.append(token)
    lines.append(" ".join(line))
    lines.append("  " + " ".join(shell_word(a) for a in command))
    text = " \\\n".join(lines)
    notes = [f"# {shim_note(request)}"] if request.use_shim else []
    if request.secret_names and not request.use_shim:
        notes.append(f"# secrets_via env: {', '.join(request.secret_names)} go into the container's Env (visible to docker inspect)")
    notes += [f"# {decision}" for decision in request.decisions]
    notes += [f"# not known without {what}: resolved before the container is created" for what in request.pending]
    return "\n".join([text, *notes])
