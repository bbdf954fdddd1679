"""``up --audit``: the started container's inspect data scanned for the secrets in scope."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from runner.secrets.scan import Finding, Scanner


def audit_container(engine, container_id: str, scope: Any) -> list[Finding]:
    """Scan ``docker inspect`` of a container: ``Config.Env[i]``, ``Args``, ``Config.Cmd``, labels, ..."""
    info = engine.request("GET", f"/containers/{quote(container_id, safe='')}/json")
    return Scanner.of(scope).scan_object(info, "")
