"""``--platform``: the image the job runs is that platform's, on Docker and Podman alike.

Docker checks the platform at create (the ``platform`` parameter) and refuses a local
image of another one; Podman's compatible API ignores the parameter. So the runner
checks the local image's ``Os``/``Architecture``/``Variant`` itself before the create,
pulls that platform's image when the pull policy allows it, and refuses otherwise:
what runs is what ``docker run --platform`` would run.
"""

from __future__ import annotations

from typing import Callable

from runner.errors import ConfigError, Problem

_ARCH_ALIASES = {"x86_64": "amd64", "x86-64": "amd64", "aarch64": "arm64", "armhf": "arm", "armel": "arm"}


def _arch(name: str) -> str:
    return _ARCH_ALIASES.get(name, name)


def image_platform(info: dict) -> str:
    """``os/arch[/variant]`` of an image's inspect data."""
    parts = [str(info.get("Os") or "linux"), _arch(str(info.get("Architecture") or "unknown"))]
    if info.get("Variant"):
        parts.append(str(info["Variant"]))
    return "/".join(parts)


def matches(info: dict, wanted: str) -> bool:
    """Does the image (its inspect data) run as ``wanted`` (``os[/arch[/variant]]``)?"""
    os_name, _, rest = wanted.partition("/")
    arch, _, variant = rest.partition("/")
    if os_name != str(info.get("Os") or "linux"):
        return False
    if arch and _arch(arch) != _arch(str(info.get("Architecture") or "")):
        return False
    have = str(info.get("Variant") or "")
    return not variant or variant == have or (not have and (arch, variant) == ("arm64", "v8"))


def ensure_platform(image: str, wanted: str, policy: str, inspect: Callable[[], dict | None],
                    fetch: Callable[[], None]) -> dict:
    """The local image's inspect data once it is ``wanted``'s: pulled (``fetch``) when it is
    absent or another platform and the policy allows; ``ConfigError`` (exit 2) otherwise."""
    info = inspect()
    if info is not None and matches(info, wanted) and policy != "always":
        return info
    if policy != "never":
        fetch()
        info = inspect()
        if info is not None and matches(info, wanted):
            return info
    have = f"is {image_platform(info)}" if info is not None else "is not present locally"
    raise ConfigError(Problem(
        f"image {image} {have}, not the requested platform {wanted} (--platform)",
        hint=(f"pull that platform's image (docker pull --platform {wanted} {image}) or drop --pull never"
              if policy == "never" else f"the registry has no {wanted} image of {image}: build one or pick another tag"),
    ))
