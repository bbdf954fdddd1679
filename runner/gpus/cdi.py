"""CDI specs: which ``vendor/class=name`` devices this host's container engines can resolve.

Podman reads every spec (JSON or YAML) in ``/etc/cdi`` and ``/var/run/cdi``; a device a
request names must be in one of them, else the container does not start. Checked before
launch so the fix comes first (``nvidia-ctk cdi generate`` writes the NVIDIA spec).
"""

from __future__ import annotations

import glob
import json
import os

SPEC_DIRS = ("/etc/cdi", "/var/run/cdi")


def _load(path: str):
    text = open(path, encoding="utf-8").read()
    if path.endswith(".json"):
        return json.loads(text)
    import yaml  # only for a YAML spec

    return yaml.safe_load(text)


def known_devices(dirs=SPEC_DIRS) -> set[str]:
    """Every ``kind=name`` the specs in ``dirs`` define (an unreadable spec defines none)."""
    names: set[str] = set()
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, "*"))):
            if not path.endswith((".json", ".yaml", ".yml")):
                continue
            try:
                spec = _load(path)
                kind = spec["kind"]
                names.update(f"{kind}={dev['name']}" for dev in spec.get("devices") or ())
            except Exception:  # unreadable, not JSON/YAML, or not a spec: it names nothing
                continue
    return names


def missing(names, dirs=SPEC_DIRS) -> list[str]:
    """The CDI device ``names`` no spec in ``dirs`` defines."""
    known = known_devices(dirs)
    return [n for n in names if n not in known]
