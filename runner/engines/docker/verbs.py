"""The Docker engine's verbs ``ps``, ``logs``, ``down`` (Docker and Podman, the engine
``container.engine`` names): the runner's own containers only, found by label.

By default only the invoking user's (``io.primus-runner.owner=<uid>``): on a shared GPU
host one user's ``down --all`` must not stop another user's training. ``--all-users``
widens that to every runner container (an administrator's cleanup).
"""

from __future__ import annotations

import os
import re
import sys

from runner.clients.engine_api import ApiError, Demux, Engine
from runner.clients.engine_api.shared import engine_client
from runner.engines.containers import managed, name_of, owner_filter, remove_containers, would_remove
from runner.errors import RuntimeFailure, UsageError
from runner.options import Selection
from runner.launch_plan import LABEL, LABEL_OWNER
from runner.ui import Output

# A name that is no runner container of yours: 1, as the contract's table fixes for ps/logs/down (0 or 1),
# which scripts test for; status/cancel of an unknown job and audit of a missing target are 2.
NOT_FOUND = 1


def _client(sel: Selection, config=None) -> Engine:
    """The engine ``--engine podman`` or the config's ``container.engine`` names: the one ``up`` launched on."""
    from runner.context import container_engine
    from runner.engines import implied_container_engine

    return engine_client(implied_container_engine(sel.engine) or container_engine(sel.sources, config))


def _exit_code(status: str) -> int | None:
    match = re.match(r"Exited \((-?\d+)\)", status or "")
    return int(match.group(1)) if match else None


def ps(sel: Selection, out: Output) -> int:
    from datetime import datetime, timezone

    rows = []
    for item in managed(_client(sel), owner_filter(sel.all_users)):
        rows.append({
            "name": name_of(item),
            "id": item["Id"][:12],
            "image": item.get("Image"),
            "status": item.get("State"),
            "exit_code": _exit_code(item.get("Status", "")),
            "created": datetime.fromtimestamp(item.get("Created", 0), timezone.utc).isoformat(),
            "detail": item.get("Status"),
            "owner": (item.get("Labels") or {}).get(LABEL_OWNER),
        })
    if out.json_mode:
        out.json(rows)
        return 0
    if not rows:
        out.info("no primus-runner containers" + ("" if sel.all_users else " of yours (--all-users lists every user's)"))
        return 0
    header = ("NAME", "ID", "IMAGE", "STATUS", "CREATED") + (("OWNER",) if sel.all_users else ())
    table = [header] + [(r["name"], r["id"], r["image"], r["detail"], r["created"][:19].replace("T", " "))
                        + ((r["owner"] or "-",) if sel.all_users else ()) for r in rows]
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
    for row in table:
        out.result("  ".join(str(cell).ljust(w) for cell, w in zip(row, widths)).rstrip())
    return 0


def _owned(eng: Engine, name: str, out: Output, all_users: bool = False) -> dict | None:
    """The container ``name`` if it is the runner's (and the caller's, unless ``all_users``);
    otherwise an error is printed and None."""
    try:
        info = eng.inspect(name)
    except ApiError as exc:
        if exc.status == 404:
            out.error(f"no container named {name}", "list the runner's containers with `primus-runner ps`")
            return None
        raise RuntimeFailure(f"cannot inspect {name}: {exc.message}") from None
    if ((info.get("Config") or {}).get("Labels") or {}).get(LABEL) != "true":
        out.error(
            f"{name} is not a primus-runner container (no label {LABEL}=true); it is left alone",
            "manage it with docker directly",
        )
        return None
    owner = ((info.get("Config") or {}).get("Labels") or {}).get(LABEL_OWNER)
    if not all_users and owner != str(os.getuid()):
        out.error(
            f"{name} is another user's primus-runner container (owner uid {owner or 'unknown'}); it is left alone",
            "add --all-users to act on every user's runner containers",
        )
        return None
    return info


def logs(sel: Selection, out: Output) -> int:
    from urllib.parse import quote

    from runner.engines.docker.run import Sink
    from runner.context import load_context

    if sel.node is not None:
        raise UsageError(f"--node is for a Slurm job id; '{sel.names[0]}' names a container", "primus-runner logs JOB_ID --node 1")
    context = load_context(sel.sources, out=out)
    masker = context.scope.masker  # the secrets in scope of this directory's config and env
    out.use_masker(masker)
    eng = _client(sel, context.config)
    info = _owned(eng, sel.names[0], out, sel.all_users)
    if info is None:
        return NOT_FOUND
    if ((info.get("HostConfig") or {}).get("LogConfig") or {}).get("Type") == "none":
        out.error(f"{sel.names[0]} has no recorded run of yours, and the engine keeps no log of a job (it would be unmasked)",
                  "the runner keeps a job's masked output in its run's log: `primus-runner runs` lists them; "
                  "with runs.record: false nothing is kept")
        return NOT_FOUND
    stdout = Sink(sys.stdout.buffer, masker, None)
    stderr = Sink(sys.stderr.buffer, masker, None)
    sinks = {1: stdout, 2: stderr}
    demux = Demux()
    params = {"stdout": 1, "stderr": 1, "follow": 1 if sel.follow else 0}
    if sel.tail is not None:
        if sel.tail < 0:
            raise UsageError("--tail takes a number of lines (0 or more)")
        params["tail"] = sel.tail
    try:
        for piece in eng.stream(f"/containers/{quote(info['Id'])}/logs", params):
            for stream, data in demux.feed(piece):
                sinks[stream].write(data)
    finally:
        stdout.close()
        stderr.close()
    return 0


def down(sel: Selection, out: Output) -> int:
    eng = _client(sel)
    if sel.dry_run:
        return _down_dry_run(eng, sel, out)
    if sel.all:
        count = remove_containers(owner_filter(sel.all_users), eng)
        whose = "" if sel.all_users else " of yours"
        out.info(f"removed {count} primus-runner container{'s' if count != 1 else ''}{whose}")
        return 0
    if not sel.names:
        raise UsageError("name the containers to remove, or use --all", hint="primus-runner ps lists them")
    failed = False
    for name in sel.names:
        info = _owned(eng, name, out, sel.all_users)
        if info is None:
            failed = True
            continue
        if (info.get("State") or {}).get("Running"):
            eng.stop(info["Id"])
        eng.remove(info["Id"])
        out.info(f"removed {name}")
    return NOT_FOUND if failed else 0


def _down_dry_run(eng: Engine, sel: Selection, out: Output) -> int:
    """``down`` in a dry run: the containers it would stop and remove, found as ``down`` finds
    them (read-only calls only), and exit 0."""
    if sel.all:
        items = managed(eng, owner_filter(sel.all_users))
    elif not sel.names:
        raise UsageError("name the containers to remove, or use --all", hint="primus-runner ps lists them")
    else:
        items = [{"Names": [name]} for name in sel.names if _owned(eng, name, out, sel.all_users) is not None]
    if out.json_mode:
        out.json({"dry_run": True, "would_remove": [name_of(item) for item in items]})
    out.info(f"dry run: {would_remove(items)}")
    return 0
