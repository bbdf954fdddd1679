"""``exec NAME -- CMD``: a command in one of the runner's running containers, as ``docker exec``.

Only the caller's own runner containers (by label, as ``logs`` and ``down``); the
output passes through the masker of every secret in scope, the exit code is the
command's. The command runs with the container's environment, which holds no secret
value when the job was started through the stdin shim (secrets live in the job's
process only): a command that needs one reads it from its own arguments' files.
"""

from __future__ import annotations

import sys

from runner.clients.engine_api import ApiError
from runner.engines.docker.verbs import NOT_FOUND
from runner.errors import RuntimeFailure, UsageError
from runner.options import Selection
from runner.ui import Output


def verb(sel: Selection, out: Output) -> int:
    """The engine's ``exec`` verb: ``sel.command`` in the running container ``sel.names[0]``."""
    return cmd_exec(sel.names[0], sel.command, sel.sources, out, all_users=sel.all_users)


def cmd_exec(name: str, command: tuple[str, ...], sources, out: Output, all_users: bool = False) -> int:
    from runner.context import load_context
    from runner.engines.docker.verbs import _owned
    from runner.engines.docker.run import Sink, pump

    if not command:
        raise UsageError("no command given", "primus-runner exec NAME -- CMD ARGS…, e.g. primus-runner exec my-job -- nvidia-smi")
    context = load_context(sources, out=out)
    masker = context.scope.masker
    out.use_masker(masker)
    if any(masker.contains_secret(arg.encode("utf-8", "surrogateescape")) for arg in command):
        raise UsageError("the command holds a secret value (it would be in the exec's inspect and in ps)",
                         "pass it through the job's environment instead")
    eng = _engine(sources, context.config)
    info = _owned(eng, name, out, all_users=all_users)
    if info is None:
        return NOT_FOUND
    if not (info.get("State") or {}).get("Running"):
        raise UsageError(f"container {name} is not running", f"primus-runner logs {name} shows its output")
    try:
        created = eng.request("POST", f"/containers/{info['Id']}/exec",
                              body={"Cmd": list(command), "AttachStdout": True, "AttachStderr": True, "Tty": False})
        sock, leftover = eng.exec_start(created["Id"])
    except ApiError as exc:
        raise RuntimeFailure(f"cannot exec in {name}: {exc.message}") from None
    stdout, stderr = Sink(sys.stdout.buffer, masker, None), Sink(sys.stderr.buffer, masker, None)
    try:
        pump(sock, leftover, stdout, stderr)
    finally:
        sock.close()
        stdout.close()
        stderr.close()
    code = eng.request("GET", f"/exec/{created['Id']}/json").get("ExitCode")
    return int(code) if code is not None else 3


def _engine(sources, config):
    from runner.clients.engine_api.shared import engine_client
    from runner.context import container_engine

    return engine_client(container_engine(sources, config))
