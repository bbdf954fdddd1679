"""The Engine API's pure request types: versions, path segments, URLs and the GPU fields of a create body.

Nothing here does I/O: what a request will say is decided (and tested) apart from the
connection that sends it (``transport``) and the calls that send it (``api``).
"""

from __future__ import annotations

import re
from typing import NamedTuple
from urllib.parse import quote, urlencode

from runner.errors import UsageError

# The oldest API the runner's requests are written for (Docker 20.10, Podman 4: 1.41)
# and the newest it knows (the docker SDK 7.1's default). Between them the calls the
# runner makes did not change in ways it depends on.
MIN_API_VERSION = "1.41"
MAX_API_VERSION = "1.45"
LIBPOD_PREFIX = "/v4.0.0/libpod"  # Podman's own API; every Podman 4 and 5 serves this version

API_VERSION = re.compile(r"^\d+\.\d+$")


def api_tuple(text: str) -> tuple[int, int]:
    """``"1.44"`` as ``(1, 44)``, for comparing versions as numbers."""
    major, _, minor = str(text).strip().partition(".")
    return int(major), int(minor or 0)


def query(path: str, params: dict | None) -> str:
    """``path?params``, the parameters that are None left out."""
    if params:
        path += "?" + urlencode({k: v for k, v in params.items() if v is not None})
    return path


def libpod_url(path: str, params: dict | None = None) -> str:
    return query(LIBPOD_PREFIX + path, params)


# Docker's rule for a container name (an id is hex): nothing that walks the API path ('/', '..', '?').
_REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def container_ref(name: str) -> str:
    """A container name or id as one API path segment; anything else is a usage error (exit 2)."""
    if not _REF.fullmatch(str(name)) or ".." in str(name):
        raise UsageError("that is not a container name or id (the text is not shown)",
                         "a name is letters, digits, '_', '.' and '-', starting with a letter or digit; "
                         "list the runner's containers with `primus-runner ps`")
    return quote(str(name), safe="")


class Capabilities(NamedTuple):
    """What differs between the engines behind the same API, as the runner meets it.

    - ``reports_oom``: ``State.OOMKilled`` is set when the kernel OOM-kills the job. Podman
      learns it from conmon, which misses it on hosts with a hybrid cgroup layout (these
      test machines): a 137 under a memory limit is then reported as "most likely".
    - ``remove_kills``: a forced remove kills at once (Docker); Podman's stops with the
      StopTimeout first unless given ``timeout=0``, which ``Engine.remove`` does.
    - ``device_requests``: ``HostConfig.DeviceRequests`` (``--gpus``) is honoured. Podman 4
      accepts and silently ignores it: CUDA goes through CDI there, see ``gpu_host_config``.
    - ``cdi_in_compat_devices``: a CDI name (``nvidia.com/gpu=all``) works as a compat
      ``HostConfig.Devices`` entry. Podman 4 treats it as a path (stat fails); only its
      libpod create endpoint (``devices: [{"path": NAME}]``) and CLI resolve CDI names.
    - ``image_name_prefix``: how the engine names a local image loaded without a registry
      (Podman: ``localhost/``), e.g. in ``Config.Image`` of an inspect.
    """

    kind: str
    reports_oom: bool
    remove_kills: bool
    device_requests: bool
    cdi_in_compat_devices: bool
    image_name_prefix: str


def capabilities(kind: str) -> Capabilities:
    if kind == "podman":
        return Capabilities("podman", reports_oom=False, remove_kills=False, device_requests=False,
                            cdi_in_compat_devices=False, image_name_prefix="localhost/")
    return Capabilities("docker", reports_oom=True, remove_kills=True, device_requests=True,
                        cdi_in_compat_devices=False, image_name_prefix="")


CDI_NVIDIA_ALL = "nvidia.com/gpu=all"


def gpu_host_config(device_request: str | None, kind: str, api_version: str = MIN_API_VERSION, cdi: bool = False,
                    device_ids: list[str] | None = None) -> dict:
    """The HostConfig fields a GPU flavor's device request adds, for this engine.

    ROCm needs none (its ``/dev/kfd`` and render/card nodes are plain ``Devices`` on both
    engines, its groups ``GroupAdd``). CUDA (``device_request == "nvidia"``), for all GPUs
    or, with ``device_ids`` (the chosen GPUs' indices), exactly those:

    - Docker: ``DeviceRequests: [{Driver: "", Count: -1, Capabilities: [["gpu"]]}]``
      (``--gpus all``) or ``DeviceIDs: ["1", "3"]`` (``--gpus '"device=1,3"'``), which needs
      nvidia-container-toolkit registered with dockerd; with ``cdi=True`` on API 1.44+
      (Docker 25+, CDI enabled in daemon.json): ``{Driver: "cdi", DeviceIDs: ["nvidia.com/gpu=…"]}``.
    - Podman: the CDI devices ``nvidia.com/gpu=N`` (``podman run --device nvidia.com/gpu=1``),
      as ``{Driver: "cdi", DeviceIDs: [...]}``. Podman 4's compat create would ignore that, so
      ``Engine.create`` sends such a body to Podman's own create (``libpod``), where CDI names
      resolve; they need a CDI spec (``nvidia-ctk cdi generate``), checked in preflight
      (``runner.gpus.cdi``).
    """
    if device_request != "nvidia":
        return {}
    cdi_names = [f"nvidia.com/gpu={i}" for i in device_ids] if device_ids else [CDI_NVIDIA_ALL]
    if kind == "podman":
        return {"DeviceRequests": [{"Driver": "cdi", "DeviceIDs": cdi_names}]}
    if cdi and api_tuple(api_version) >= (1, 44):
        return {"DeviceRequests": [{"Driver": "cdi", "DeviceIDs": cdi_names}]}
    if device_ids:
        return {"DeviceRequests": [{"Driver": "", "DeviceIDs": list(device_ids), "Capabilities": [["gpu"]]}]}
    return {"DeviceRequests": [{"Driver": "", "Count": -1, "Capabilities": [["gpu"]]}]}
