"""``docker run`` options the runner does not model, carried to the Engine API as they are.

The Primus launcher hands any ``--NAME VALUE`` (or boolean ``--NAME``) of its ``container``
mode to ``docker run``. The runner talks to the Engine API, not the docker CLI, so each
option it passes through is one entry of ``PASSTHROUGH``: where it goes in the create
body and how its text becomes the API's type. The options the runner models itself
(image, mounts, devices, env, caps, limits …) are in ``runner.cli.launcher_args``; what
would break a secret guarantee or the runner's own lifecycle is in ``REFUSED`` with
the reason and the fix. The create body is then checked whole (``check_clean``), so a
secret value in any passed-through option is refused like anywhere else.

Podman's compatible API takes the same body; an option it ignores is said by Podman.
Pure: nothing here talks to the daemon.
"""

from __future__ import annotations

import re
from typing import Any, Callable

# Short forms docker run accepts (-h is the launcher's --help, so it is not --hostname here).
SHORT = {"v": "volume", "e": "env", "u": "user", "w": "workdir", "m": "memory", "p": "publish", "l": "label",
         "c": "cpu-shares", "d": "detach", "i": "interactive", "t": "tty", "P": "publish-all", "a": "attach", "q": "quiet"}
ALIASES = {"net": "network", "link-local-ip": "link-local-ip"}
# docker run's flags that take no value (``--NAME`` alone; ``--NAME=false`` turns one off).
BOOLEAN = {"detach", "disable-content-trust", "help", "init", "interactive", "no-healthcheck", "oom-kill-disable",
           "privileged", "publish-all", "quiet", "read-only", "rm", "sig-proxy", "tty", "use-api-socket"}

_ENGINE_LOG = "the engine would keep the job's output unmasked on the host's disk (its log driver is none)"
_OWN_LOG = "leave it out: the runner keeps the job's masked output, `primus-runner logs NAME` shows it"
REFUSED: dict[str, tuple[str, str]] = {
    "label-file": ("a label file's values would be copied into the container's labels unchecked", "pass each one as --label KEY=VALUE"),
    "tty": ("the launcher's container mode streams the job's output; a terminal is for an interactive job",
            "leave out -t/--tty here; for a shell in the job's image use `primus-runner shell` or `up -it -- bash`"),
    "use-api-socket": ("it mounts the engine's socket into the job, which could then read every container's environment",
                       "leave it out; run engine commands outside the job"),
    "restart": ("the runner waits for the job and removes its container; a restart policy would restart it behind the runner",
                "leave it out; Slurm's --requeue restarts a failed job under submit"),
    "cidfile": ("the runner prints the container's name and labels it; it does not write container id files",
                "use `primus-runner ps --json` for the container's name and id"),
    "ip": ("a fixed address needs a user-defined network the runner does not create", "use --network NAME of a network you made"),
    "ip6": ("a fixed address needs a user-defined network the runner does not create", "use --network NAME of a network you made"),
    "network-alias": ("aliases need a user-defined network the runner does not create", "leave it out"),
    "link-local-ip": ("link-local addresses need a user-defined network the runner does not create", "leave it out"),
    "isolation": ("Windows containers only", "leave it out"),
    "log-driver": (_ENGINE_LOG, _OWN_LOG),
    "log-opt": (_ENGINE_LOG, _OWN_LOG),
}
# Accepted and without effect: the runner already does what they ask (or the engine API has no such thing).
NOOP = {
    "rm": "the runner always removes its container when the job ends (--keep, on up, keeps it)",
    "init": "the runner always runs an init process (tini) as PID 1",
    "interactive": "the runner attaches stdin itself (it hands over the secrets through it)",
    "attach": "the runner attaches stdout and stderr and streams them masked",
    "sig-proxy": "the runner forwards SIGINT/SIGTERM to the job",
    "detach-keys": "the runner never allocates a TTY to detach from",
    "disable-content-trust": "the runner pulls through the engine API, without content trust",
    "quiet": "the runner shows pull progress on a terminal only",
}


def _int(text: str) -> int:
    return int(text)


def _bytes(text: str) -> int:
    from runner.config.container_values import parse_bytes  # ValueError on a bad size (not the request module: a cycle)

    return -1 if text.strip() == "-1" else parse_bytes(text)


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "m": 60_000_000_000, "h": 3_600_000_000_000}


def _duration(text: str) -> int:
    """Go's duration syntax (``30s``, ``1m30s``, ``500ms``) as nanoseconds, as the API takes it."""
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"{text!r} is not a duration such as 30s or 1m30s")
    return int(sum(float(n) * _NS[u] for n, u in parts))


def _pair(text: str, sep: str = "=") -> tuple[str, str]:
    key, found, value = text.partition(sep)
    if not found or not key:
        raise ValueError(f"{text!r} is not KEY{sep}VALUE")
    return key, value


def _set(section: str, key: str, convert: Callable[[str], Any] = str) -> Callable[[dict, str | None], None]:
    def apply(body: dict, value: str | None) -> None:
        _section(body, section)[key] = convert(value or "")
    return apply


def _flag(section: str, key: str) -> Callable[[dict, str | None], None]:
    def apply(body: dict, value: str | None) -> None:
        if value not in (None, "", "true", "True", "1", "false", "False", "0"):
            raise ValueError(f"{value!r} is not true or false")
        _section(body, section)[key] = value not in ("false", "False", "0")
    return apply


def _append(section: str, key: str, convert: Callable[[str], Any] = str) -> Callable[[dict, str | None], None]:
    def apply(body: dict, value: str | None) -> None:
        _section(body, section).setdefault(key, []).append(convert(value or ""))
    return apply


def _mapping(section: str, key: str, sep: str = "=") -> Callable[[dict, str | None], None]:
    def apply(body: dict, value: str | None) -> None:
        k, v = _pair(value or "", sep)
        _section(body, section).setdefault(key, {})[k] = v
    return apply


def _section(body: dict, section: str) -> dict:
    return body if section == "" else body.setdefault(section, {})


def _throttle(key: str, field: str) -> Callable[[dict, str | None], None]:
    def apply(body: dict, value: str | None) -> None:
        path, rate = _pair(value or "", ":")
        number = _int(rate) if field in ("Weight",) or key.endswith("Iops") else _bytes(rate)
        body.setdefault("HostConfig", {}).setdefault(key, []).append({"Path": path, field: number})
    return apply


def _tmpfs(body: dict, value: str | None) -> None:
    path, _, options = (value or "").partition(":")
    if not path.startswith("/"):
        raise ValueError(f"{value!r}: the tmpfs path must be absolute")
    body.setdefault("HostConfig", {}).setdefault("Tmpfs", {})[path] = options


_PORT = re.compile(r"^(?:(?:(\[[0-9a-fA-F:]+\]|[0-9.]+):)?(\d*):)?(\d+(?:-\d+)?)(?:/(tcp|udp|sctp))?$")


def _publish(body: dict, value: str | None) -> None:
    """``[IP:][HOST_PORT:]CONTAINER_PORT[/PROTO]``: ExposedPorts and PortBindings."""
    match = _PORT.match(value or "")
    if not match or "-" in match.group(3):
        raise ValueError(f"{value!r} is not [IP:][HOST_PORT:]CONTAINER_PORT[/PROTO]")
    ip, host_port, port, proto = match.groups()
    key = f"{port}/{proto or 'tcp'}"
    body.setdefault("ExposedPorts", {})[key] = {}
    binding = {"HostIp": (ip or "").strip("[]"), "HostPort": host_port or ""}
    body.setdefault("HostConfig", {}).setdefault("PortBindings", {}).setdefault(key, []).append(binding)


def _expose(body: dict, value: str | None) -> None:
    port, _, proto = (value or "").partition("/")
    if not port.isdigit():
        raise ValueError(f"{value!r} is not PORT[/PROTO]")
    body.setdefault("ExposedPorts", {})[f"{port}/{proto or 'tcp'}"] = {}


def _health(key: str, convert: Callable[[str], Any]) -> Callable[[dict, str | None], None]:
    def apply(body: dict, value: str | None) -> None:
        check = body.setdefault("Healthcheck", {})
        check[key] = ["CMD-SHELL", value or ""] if key == "Test" else convert(value or "")
    return apply


def _no_healthcheck(body: dict, value: str | None) -> None:
    body["Healthcheck"] = {"Test": ["NONE"]}


def _label(body: dict, value: str | None) -> None:
    k, _, v = (value or "").partition("=")
    if not k or k.startswith("io.primus-runner."):
        raise ValueError(f"{value!r}: labels are KEY=VALUE, and io.primus-runner.* are the runner's own")
    body.setdefault("Labels", {})[k] = v


PASSTHROUGH: dict[str, Callable[[dict, str | None], None]] = {
    "add-host": _append("HostConfig", "ExtraHosts"),
    "blkio-weight": _set("HostConfig", "BlkioWeight", _int),
    "blkio-weight-device": _throttle("BlkioWeightDevice", "Weight"),
    "cap-drop": _append("HostConfig", "CapDrop"),
    "cgroup-parent": _set("HostConfig", "CgroupParent"),
    "cgroupns": _set("HostConfig", "CgroupnsMode"),
    "cpu-period": _set("HostConfig", "CpuPeriod", _int),
    "cpu-quota": _set("HostConfig", "CpuQuota", _int),
    "cpu-rt-period": _set("HostConfig", "CpuRealtimePeriod", _int),
    "cpu-rt-runtime": _set("HostConfig", "CpuRealtimeRuntime", _int),
    "cpu-shares": _set("HostConfig", "CpuShares", _int),
    "cpuset-cpus": _set("HostConfig", "CpusetCpus"),
    "cpuset-mems": _set("HostConfig", "CpusetMems"),
    "device-cgroup-rule": _append("HostConfig", "DeviceCgroupRules"),
    "device-read-bps": _throttle("BlkioDeviceReadBps", "Rate"),
    "device-read-iops": _throttle("BlkioDeviceReadIOps", "Rate"),
    "device-write-bps": _throttle("BlkioDeviceWriteBps", "Rate"),
    "device-write-iops": _throttle("BlkioDeviceWriteIOps", "Rate"),
    "dns": _append("HostConfig", "Dns"),
    "dns-option": _append("HostConfig", "DnsOptions"),
    "dns-search": _append("HostConfig", "DnsSearch"),
    "domainname": _set("", "Domainname"),
    "expose": _expose,
    "health-cmd": _health("Test", str),
    "health-interval": _health("Interval", _duration),
    "health-retries": _health("Retries", _int),
    "health-start-period": _health("StartPeriod", _duration),
    "health-timeout": _health("Timeout", _duration),
    "kernel-memory": _set("HostConfig", "KernelMemory", _bytes),
    "label": _label,
    "link": _append("HostConfig", "Links"),
    "mac-address": _set("", "MacAddress"),
    "memory-reservation": _set("HostConfig", "MemoryReservation", _bytes),
    "memory-swap": _set("HostConfig", "MemorySwap", _bytes),
    "memory-swappiness": _set("HostConfig", "MemorySwappiness", _int),
    "no-healthcheck": _no_healthcheck,
    "oom-kill-disable": _flag("HostConfig", "OomKillDisable"),
    "oom-score-adj": _set("HostConfig", "OomScoreAdj", _int),
    "pid": _set("HostConfig", "PidMode"),
    "pids-limit": _set("HostConfig", "PidsLimit", _int),
    "publish": _publish,
    "publish-all": _flag("HostConfig", "PublishAllPorts"),
    "read-only": _flag("HostConfig", "ReadonlyRootfs"),
    "runtime": _set("HostConfig", "Runtime"),
    "stop-signal": _set("", "StopSignal"),
    "stop-timeout": _set("", "StopTimeout", _int),
    "storage-opt": _mapping("HostConfig", "StorageOpt"),
    "sysctl": _mapping("HostConfig", "Sysctls"),
    "tmpfs": _tmpfs,
    "userns": _set("HostConfig", "UsernsMode"),
    "uts": _set("HostConfig", "UTSMode"),
    "volume-driver": _set("HostConfig", "VolumeDriver"),
    "volumes-from": _append("HostConfig", "VolumesFrom"),
}


def problem(name: str, value: str | None) -> str | None:
    """Why ``--name value`` cannot go into a create body (its value's form), else None."""
    try:
        PASSTHROUGH[name]({}, value)
    except (ValueError, TypeError) as exc:
        return f"--{name}: {exc}"
    except Exception as exc:  # a size the size parser refuses
        return f"--{name}: {getattr(exc, 'message', None) or exc}"
    return None


def apply(body: dict, options: tuple[tuple[str, str | None], ...]) -> dict:
    """The create body with each passed-through option applied, in the order given (later wins)."""
    for name, value in options:
        PASSTHROUGH[name](body, value)
    return body


def argv(options: tuple[tuple[str, str | None], ...]) -> list[str]:
    """The options as ``docker run`` takes them (the dry run's view)."""
    out: list[str] = []
    for name, value in options:
        out += [f"--{name}"] if value is None else [f"--{name}", value]
    return out
