"""A Docker-compatible create body as Podman's own (libpod) create body.

Only for what the compat endpoint cannot carry: CDI devices (``nvidia.com/gpu=1``).
Podman 4's compat create stats a CDI name in ``HostConfig.Devices`` as a path and
accepts, then ignores, ``DeviceRequests`` (a CUDA job would run without GPUs); its
libpod create resolves CDI names in ``devices``. Every field the runner's body can hold
is translated; one that is not known here is refused, never dropped.
"""

from __future__ import annotations


def cdi_devices(config: dict) -> list[str]:
    """The CDI device names a body asks for (``DeviceRequests`` with ``Driver: cdi``)."""
    return [name for r in (config.get("HostConfig") or {}).get("DeviceRequests") or () if r.get("Driver") == "cdi"
            for name in r.get("DeviceIDs") or ()]


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


def _mount(bind: str) -> dict:
    source, target, *mode = bind.split(":")
    return {"destination": target, "type": "bind", "source": source, "options": ["rbind", *",".join(mode).split(",")] if mode else ["rbind"]}


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
            body["mounts"] = [_mount(b) for b in value]
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
