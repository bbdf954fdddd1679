"""A Docker-compatible create body as Podman's own (libpod) create body.

On Podman every container the runner creates goes to its own create endpoint with
this translation (``podman_create``), so the whole lifecycle stays on Podman's API.
It is needed for CDI devices (``nvidia.com/gpu=1``): Podman 4's compat create stats a
CDI name in ``HostConfig.Devices`` as a path and accepts, then ignores,
``DeviceRequests`` (a CUDA job would run without GPUs); its libpod create resolves CDI
names in ``devices``. Every field the runner's own body can hold is translated; one
that is not known here (a ``docker run`` option passed through) is never dropped: the
body then goes to the compat create as given, or, with CDI devices, is refused.
"""

from __future__ import annotations


def cdi_devices(config: dict) -> list[str]:
    """The CDI device names a body asks for (``DeviceRequests`` with ``Driver: cdi``)."""
    return [name for r in (config.get("HostConfig") or {}).get("DeviceRequests") or () if r.get("Driver") == "cdi"
            for name in r.get("DeviceIDs") or ()]


def podman_create(name: str, config: dict) -> dict | None:
    """The body for Podman's own create, or None when ``config`` holds a field with no translation
    here (the compat create carries it). ``ValueError``: CDI devices with such a field."""
    try:
        return create_body(name, config)
    except ValueError:
        if cdi_devices(config):
            raise
        return None


def _namespace(mode: str) -> dict:
    if mode.startswith("container:"):
        return {"nsmode": "container", "value": mode.split(":", 1)[1]}
    return {"nsmode": {"default": "bridge"}.get(mode, mode)}


def _security(opts: list[str]) -> dict:
    out: dict = {}
    for opt in opts:
        key, _, value = opt.replace(":", "=", 1).partition("=")
        if key == "label":
            out.setdefault("selinux_opts", []).append(value)
        elif key == "seccomp":
            out["seccomp_profile_path"] = value
        elif key == "apparmor":
            out["apparmor_profile"] = value
        elif key == "no-new-privileges" and value in ("", "true"):
            out["no_new_privileges"] = True
        else:
            raise ValueError(f"security option {opt!r}")
    return out


_BIND_OPTIONS = {"ro", "rw", "z", "Z", "shared", "rshared", "slave", "rslave", "private", "rprivate"}


def _options(bind: str, allowed: set[str]) -> tuple[str, str, list[str]]:
    source, target, *mode = bind.split(":")
    options = ",".join(mode).split(",") if mode else []
    unknown = [o for o in options if o not in allowed]
    if unknown:  # Docker's no-op options (cached, delegated, …): the compat create knows what to make of them
        raise ValueError(f"mount option {unknown[0]!r}")
    return source, target, options


def _mount(bind: str) -> dict:
    source, target, options = _options(bind, _BIND_OPTIONS)
    return {"destination": target, "type": "bind", "source": source, "options": ["rbind", *options]}


def _volume(bind: str) -> dict:
    """``NAME:/target[:mode]``: a named volume (created if absent), as the compat ``Binds`` make it."""
    name, target, options = _options(bind, _BIND_OPTIONS | {"nocopy"})
    return {"Name": name, "Dest": target, "Options": options}


def _rlim(value: int) -> int:
    return value if value >= 0 else 2**64 - 1  # -1 (unlimited) is RLIM_INFINITY, an unsigned field here


_IGNORED = {"AttachStdin", "AttachStdout", "AttachStderr", "StdinOnce"}  # attach-time flags: the attach call sets them
_HOST_IGNORED = {"DeviceRequests"}  # carried as CDI devices


def create_body(name: str, config: dict) -> dict:
    """The libpod ``POST /containers/create`` body for ``config`` plus its CDI devices.
    ``ValueError`` names a field that has no translation here."""
    host = dict(config.get("HostConfig") or {})
    body: dict = {"name": name, "image": config["Image"], "command": list(config.get("Cmd") or []),
                  "env": dict(e.split("=", 1) if "=" in e else (e, "") for e in config.get("Env") or ()),
                  "labels": dict(config.get("Labels") or {}), "stdin": bool(config.get("OpenStdin")),
                  "terminal": bool(config.get("Tty"))}
    simple = {"Entrypoint": "entrypoint", "User": "user", "WorkingDir": "work_dir", "StopTimeout": "stop_timeout", "Hostname": "hostname"}
    for key, value in config.items():
        if key in simple:
            body[simple[key]] = value
            if key == "WorkingDir":
                body["create_working_dir"] = True  # as Docker (and Podman's compat create) do for a directory the image lacks
        elif key not in _IGNORED and key not in ("Image", "Cmd", "Env", "Labels", "OpenStdin", "Tty", "HostConfig"):
            raise ValueError(f"create field {key}")
    devices = [{"path": f"{d['PathOnHost']}:{d['PathInContainer']}:{d.get('CgroupPermissions') or 'rwm'}"}
               for d in host.pop("Devices", None) or ()]
    body["devices"] = devices + [{"path": n} for n in cdi_devices(config)]
    limits: dict = {}
    for key, value in host.items():
        if key in _HOST_IGNORED:
            continue
        if key == "Init":
            body["init"] = bool(value)
        elif key == "Privileged":
            body["privileged"] = bool(value)
        elif key == "CapAdd":
            body["cap_add"] = list(value)
        elif key == "GroupAdd":
            body["groups"] = [str(g) for g in value]
        elif key == "SecurityOpt":
            body.update(_security(list(value)))
        elif key == "Ulimits":
            body["r_limits"] = [{"type": u["Name"], "soft": _rlim(u["Soft"]), "hard": _rlim(u["Hard"])} for u in value]
        elif key == "Binds":
            body["mounts"] = [_mount(b) for b in value if b.startswith("/")]
            body["volumes"] = [_volume(b) for b in value if not b.startswith("/")]
        elif key == "IpcMode":
            body["ipcns"] = _namespace(value)
        elif key == "NetworkMode" and value.split(":")[0] in ("host", "none", "bridge", "default", "private", "container"):
            body["netns"] = _namespace(value)
        elif key == "LogConfig" and value.get("Type"):
            body["log_configuration"] = {"driver": value["Type"]}
        elif key == "ShmSize":
            body["shm_size"] = int(value)
        elif key == "Memory":
            limits["memory"] = {"limit": int(value)}
        elif key == "NanoCpus":
            limits["cpu"] = {"quota": int(value) // 10_000, "period": 100_000}
        else:
            raise ValueError(f"HostConfig.{key}={value!r}")
    if limits:
        body["resource_limits"] = limits
    return body
