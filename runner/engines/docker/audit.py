"""A container scanned for the secrets in scope: its ``docker inspect`` data and its engine log.

The runner's own containers keep no engine log (log driver ``none``); one started another way
may: whatever its job printed is on the host's disk, so ``audit`` reads it back too.
"""

from __future__ import annotations

from typing import Any, Iterator
from urllib.parse import quote

from runner.secrets.scan import Finding, Scanner

ENGINE_LOG = "engine log"  # how a finding in the log is placed: ``engine log:LINE``


def audit_container(engine, container_id: str, scope: Any) -> list[Finding]:
    """Scan ``docker inspect`` of a container (``Config.Env[i]``, ``Args``, ``Config.Cmd``, labels …) and its engine log."""
    info = engine.request("GET", f"/containers/{quote(container_id, safe='')}/json")
    return audit_inspected(engine, info, Scanner.of(scope))


def audit_inspected(engine, info: dict, scanner: Scanner) -> list[Finding]:
    """The findings in a container's inspect data ``info`` and in its engine log."""
    return scanner.scan_object(info, "") + _engine_log(engine, info, scanner)


def _engine_log(engine, info: dict, scanner: Scanner) -> list[Finding]:
    from runner.clients.engine_api import ApiError, Demux

    if ((info.get("HostConfig") or {}).get("LogConfig") or {}).get("Type") == "none" or not scanner:
        return []
    tty = bool((info.get("Config") or {}).get("Tty"))
    pieces = engine.stream(f"/containers/{quote(info['Id'], safe='')}/logs", {"stdout": 1, "stderr": 1})
    demux = Demux()
    data = pieces if tty else (part for piece in pieces for _, part in demux.feed(piece))
    try:
        return scanner.scan_stream(_Reader(data), ENGINE_LOG)
    except ApiError:  # a log driver the engine cannot read back (syslog, fluentd …): nothing on this host to scan
        return []


class _Reader:
    """A byte iterator as the file ``Scanner.scan_stream`` reads."""

    def __init__(self, parts: Iterator[bytes]):
        self._parts = iter(parts)

    def read(self, size: int) -> bytes:
        chunk = bytearray()
        for part in self._parts:
            chunk += part
            if len(chunk) >= size:
                break
        return bytes(chunk)
