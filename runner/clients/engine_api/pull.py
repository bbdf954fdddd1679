"""Pulling an image through the Engine API, with the registry credential in ``X-Registry-Auth`` only.

``POST /images/create?fromImage=…&tag=…`` streams JSON progress; a failure comes
either as the HTTP status of the request or as an ``{"error": …}`` message inside
the stream. Both are mapped to the contract's exit codes with the fix:
a refused credential exits 2, an unreachable registry 1, an image or tag that is
not there 2 — nothing is launched, and no traceback.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from runner.clients.engine_api.chunks import json_messages
from runner.clients.engine_api.transport import ApiError
from runner.errors import ConfigError, EngineUnavailable, Problem, RuntimeFailure, UsageError

if TYPE_CHECKING:
    from runner.clients.engine_api.api import Engine
    from runner.ui.pull_progress import PullProgress
    from runner.clients.registry import RegistryCredential

POLICIES = ("missing", "always", "never")


def split_reference(image: str) -> tuple[str, str]:
    """``repo[:tag][@digest]`` → (repo, tag or digest) as the API's fromImage/tag; ``latest`` when neither is given."""
    if "@" in image:
        repo, digest = image.split("@", 1)
        return repo, digest
    last = image.rsplit("/", 1)[-1]
    if ":" in last:
        repo, tag = image.rsplit(":", 1)
        return repo, tag
    return image, "latest"


def image_present(engine: "Engine", image: str) -> bool:
    """Is ``image`` in the engine's local store (``GET /images/{name}/json``; Podman: ``…/exists``)?"""
    try:
        return engine.image_exists(image)
    except ApiError as exc:
        raise RuntimeFailure(f"could not inspect image {image}: {exc.message}") from None


def not_present_error(image: str) -> ConfigError:
    """``--pull never`` and the image is not local (also for a caller whose create answered 404)."""
    return ConfigError(Problem(
        f"image {image} is not present locally and the pull policy is 'never'",
        hint=f"pull it (--pull missing, or docker pull {image}), or check the image name and tag",
    ))


def _present_enough(engine: "Engine", image: str, policy: str, present: bool | None = None) -> bool:
    """True when the policy needs no pull; raises for ``never`` without the image. ``present``: known already."""
    if policy not in POLICIES:
        raise UsageError(f"--pull {policy}: not one of {', '.join(POLICIES)}", hint="use --pull missing, always or never")
    if policy == "always":
        return False
    if present is None:
        present = image_present(engine, image)
    if present:
        return True
    if policy == "never":
        raise not_present_error(image)
    return False


def pull_as_needed(engine: "Engine", image: str, *, policy: str, lookup, out=None, progress: "PullProgress | None" = None,
                 env_names: tuple[str, str, str] | None = None, present: bool | None = None, platform: str | None = None) -> bool:
    """The one call for ``up``/``submit``/``build`` and the Slurm node agent: the image as the policy wants it.

    The credential is looked up (Docker config, credential helper, env names)
    only when a pull will happen, so ``missing`` with a local image costs one
    inspect and never runs a helper. ``lookup(NAME)``: environment + env file.
    ``out`` (a ``runner.ui.Output``) picks the progress display when
    ``progress`` is not given. ``present``: what the caller already knows (a
    create that answered 404 → False), saving the inspect. Returns True when pulled.
    """
    if _present_enough(engine, image, policy, present):
        return False
    from runner.clients.registry import ENV_NAMES, credentials_for  # only for a pull: a local image needs no login

    credential = credentials_for(image, lookup, env_names=env_names or ENV_NAMES)
    if progress is None and out is not None:
        from runner.ui.pull_progress import progress_for

        progress = progress_for(out, credential)
    return pull(engine, image, policy="always", credential=credential, progress=progress, platform=platform)


def pull_refusal(engine: "Engine", image: str, *, policy: str, lookup, online: bool) -> tuple[str, bool]:
    """For ``check``: what ``pull_as_needed`` would refuse, raised with the same message and exit code,
    without pulling; else (the line to print, whether the registry was asked with the pull's login). The registry is asked (``online``) as the daemon asks it
    for a pull: Docker's distribution endpoint, with the same credential and the same mapping of its
    answer (``_failure``). Podman has no such endpoint: the registry's login is all ``check`` asks there."""
    if _present_enough(engine, image, policy):
        return f"image {image}: present locally", False
    if not online:
        return f"image {image}: not present locally; up pulls it (check --online asks the registry whether it can)", False
    if engine.is_podman:
        return f"image {image}: not present locally; Podman cannot be asked whether a pull would work without pulling", False
    from runner.clients.registry import ENV_NAMES, auth_header, credentials_for

    credential = credentials_for(image, lookup, env_names=ENV_NAMES)
    try:
        engine.distribution(image, auth_header(credential) if credential is not None else None)
    except ApiError as exc:
        raise _failure(image, credential, exc.message, exc.status if exc.status != 500 else None) from None
    return f"image {image}: not present locally; the registry serves it to {engine.kind} with the login a pull uses (nothing pulled)", True


def pull(engine: "Engine", image: str, *, policy: str = "missing", credential: "RegistryCredential | None" = None,
         progress: "PullProgress | None" = None, platform: str | None = None) -> bool:
    """Make ``image`` available under ``policy``; returns True when it was pulled.
    ``platform`` (``linux/arm64``): that platform's image of a multi-platform tag.

    ``missing`` pulls only when the image is not local (like ``docker run``),
    ``always`` pulls every time (a no-op download when it is up to date),
    ``never`` fails (exit 2, with the fix) when it is not local.
    """
    if _present_enough(engine, image, policy):
        return False
    repo, tag = split_reference(image)
    headers = {}
    if credential is not None:
        from runner.clients.registry import auth_header

        headers["X-Registry-Auth"] = auth_header(credential)
    if progress is not None:
        progress.begin(image)
    ok = False
    try:
        error = None
        try:
            for message in json_messages(engine.stream("/images/create", {"fromImage": repo, "tag": tag, "platform": platform},
                                                       method="POST", headers=headers)):
                if "error" in message:
                    error = str(message.get("error") or (message.get("errorDetail") or {}).get("message") or "unknown error")
                    break
                if progress is not None:
                    _report(progress, message)
        except ApiError as exc:
            raise _failure(image, credential, exc.message, exc.status) from None
        if error is not None:
            raise _failure(image, credential, error, None)
        ok = True
    finally:
        if progress is not None:
            progress.end(ok)
    return True


def _number(value) -> int | None:
    """A byte count from ``progressDetail``, or None for anything that is not one."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return None
    return int(value)


def _report(progress: "PullProgress", message: dict) -> None:
    status = str(message.get("status") or "")
    layer = message.get("id")
    detail = message.get("progressDetail")
    detail = detail if isinstance(detail, dict) else {}
    if layer and status and not status.startswith("Pulling from"):
        progress.layer(str(layer), status, _number(detail.get("current")), _number(detail.get("total")))
    elif status:
        progress.status(status if not layer else f"{status} ({layer})")


# The daemon's words for each kind of failure (Docker 20.10 … 29, Podman).
_DENIED = ("unauthorized", "authentication required", "no basic auth credentials", "incorrect username or password",
           "denied", "401 unauthorized", "403 forbidden")
_UNREACHABLE = ("dial tcp", "connection refused", "no such host", "i/o timeout", "timeout exceeded", "tls handshake",
                "network is unreachable", "no route to host", "connection reset", "server misbehaving", "certificate",
                "x509", "503 service unavailable", "502 bad gateway", "504 gateway", "500 internal server error", ": eof")
_NOT_FOUND = ("manifest unknown", "not found", "repository does not exist", "name unknown", "no such image")


def _failure(image: str, credential: "RegistryCredential | None", message: str, status: int | None):
    from runner.clients.registry import registry_of

    registry = registry_of(image)
    text = message.strip()
    lower = text.lower()
    if status == 400 or "invalid reference format" in lower or "must be lowercase" in lower:
        return UsageError(f"image reference {image} is not valid: {text}", hint="check the image name (lowercase repository, one :tag)")
    # "pull access denied … repository does not exist or may require 'docker login'" is Docker Hub's answer
    # for both; with no credential, the fix is the same: the name, or a login.
    if "pull access denied" in lower or (any(word in lower for word in _DENIED) and "not found" not in lower):
        if credential is None:
            return ConfigError(Problem(
                f"registry {registry} refused to serve {image} without a login: {text}",
                hint=f"log in (docker login {registry if registry != 'docker.io' else ''}".rstrip()
                     + ", or set DOCKER_LOGIN_USER/DOCKER_LOGIN_KEY/DOCKER_LOGIN_REGISTRY), or check the image name",
            ))
        return ConfigError(Problem(
            f"registry {registry} refused {credential.describe()} for {image}: {text}",
            hint="fix the credential in its source (log in again, or correct DOCKER_LOGIN_KEY), and check the image name",
        ))
    if (status == 404 or any(word in lower for word in _NOT_FOUND)) and not any(word in lower for word in ("dial tcp", "no such host")):
        return ConfigError(Problem(  # the daemon's words differ between a pull and a distribution ask; they add nothing here
            f"image {image} was not found in registry {registry}",
            hint="check the image name and tag (the registry's tags: curl its /v2/<name>/tags/list, or its web UI)",
        ))
    if "http response to https client" in lower:
        return EngineUnavailable(
            f"registry {registry} speaks plain HTTP and the engine expects HTTPS: {text}",
            hint=f"serve the registry over TLS, or mark {registry} insecure for the engine (Docker: \"insecure-registries\" "
                 f"in /etc/docker/daemon.json; Podman: [[registry]] location=\"{registry}\" insecure=true in "
                 "/etc/containers/registries.conf.d/, then restart the engine)",
        )
    if any(word in lower for word in _UNREACHABLE):
        return EngineUnavailable(
            f"registry {registry} is not reachable from the container engine: {text}",
            hint="check the registry address, that it is up, and the engine's network/proxy settings",
        )
    return RuntimeFailure(f"pull of {image} failed: {text}", hint="try docker pull with the same image to see the daemon's view")
