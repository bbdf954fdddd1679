"""``exec NAME [-i] [-t] -- CMD``: a command in one of the runner's running containers, as ``docker exec``.

Only the caller's own runner containers (by label, as ``logs`` and ``down``). The command
gets the job's environment, secrets included, the way the job got it: the container's
public env, and the job's secret values through the stdin shim (``shim``), written into
the exec's stdin, so no value is on the exec's command line or in its inspect. Which
secrets: those the command found in the job's run (``Selection.job_secrets``, for the
container ``job_container``). The output is masked for them and this directory's; the
exit code is the command's.
"""

from __future__ import annotations

import socket
import sys

from runner.clients.engine_api import ApiError
from runner.engines.docker import shim
from runner.engines.docker.verbs import NOT_FOUND
from runner.errors import RuntimeFailure, UsageError
from runner.options import Selection
from runner.secrets import Secret, secret_scope
from runner.ui import Output


def verb(sel: Selection, out: Output) -> int:
    """The engine's ``exec`` verb: ``sel.command`` in the running container ``sel.names[0]``."""
    from runner.context import load_context
    from runner.engines.docker.verbs import _client, _owned
    from runner.engines.docker.run import Sink, pump

    name, command = sel.names[0], sel.command
    context = load_context(sel.sources, out=out)
    out.use_masker(context.scope.masker)
    if any(context.scope.masker.contains_secret(arg.encode("utf-8", "surrogateescape")) for arg in command):
        raise UsageError("the command holds a secret value (it would be in the exec's inspect and in ps)",
                         "pass it through the job's environment instead")
    eng = _client(sel, context.config)
    info = _owned(eng, name, out, all_users=sel.all_users)
    if info is None:
        return NOT_FOUND
    if not (info.get("State") or {}).get("Running"):
        raise UsageError(f"container {name} is not running", f"primus-runner logs {name} shows its output")
    secrets = _job_secrets(info, name, sel, out)
    scope = secret_scope(extra=[*context.scope.named, *sel.job_secrets])  # this directory's secrets and the job's
    out.use_masker(scope.masker)
    argv = [*shim.shim_entrypoint(sel.interactive, sel.tty), *command] if secrets is not None else list(command)
    try:
        created = eng.request("POST", f"/containers/{info['Id']}/exec", body={
            "Cmd": argv, "AttachStdin": secrets is not None or sel.interactive, "AttachStdout": True, "AttachStderr": True,
            "Tty": sel.tty})
        sock, leftover = eng.exec_start(created["Id"], tty=sel.tty)
    except ApiError as exc:
        raise RuntimeFailure(f"cannot exec in {name}: {exc.message}") from None
    stdout, stderr = Sink(sys.stdout.buffer, scope.masker, None), Sink(sys.stderr.buffer, scope.masker, None)
    try:
        ready, leftover = _hand_over(sock, leftover, secrets, sel)
        if ready and (sel.interactive or sel.tty):
            from runner.engines.docker.interactive import attached

            with attached(eng, created["Id"], sock, interactive=sel.interactive, tty=sel.tty, kind="exec"):
                pump(sock, leftover, stdout, stderr, raw=sel.tty)
        else:
            pump(sock, leftover, stdout, stderr, raw=sel.tty)
    finally:
        sock.close()
        stdout.close()
        stderr.close()
    code = eng.request("GET", f"/exec/{created['Id']}/json").get("ExitCode")
    return int(code) if code is not None else 3


def _job_secrets(info: dict, name: str, sel: Selection, out: Output) -> dict[str, Secret] | None:
    """The job's secrets by name, when ``sel`` holds this container's (its run's record). None: the
    job was not started through the shim (no secret, or ``secrets_via: env``: they are in its environment)."""
    if shim.SHIM_ARGV0 not in ((info.get("Config") or {}).get("Entrypoint") or []):
        return None
    if sel.job_container != info["Id"]:
        out.warn(f"no run record of {name} for this user: the command runs without the job's secrets")
        return {}
    return dict(sel.job_secrets)


def _hand_over(sock: socket.socket, leftover: bytes, secrets: dict[str, Secret] | None, sel: Selection) -> tuple[bool, bytes]:
    """The secrets into the shim's stdin, as a launch hands them over (with a terminal, once its echo
    is off); then stdin's EOF unless ``-i`` gives the command the user's stdin. False: the shim refused."""
    if secrets is None:
        return True, leftover
    if sel.tty:
        from runner.engines.docker.interactive import await_ready

        ready, leftover = await_ready(sock, leftover)
        if not ready:
            return False, leftover
    sock.sendall(shim.encode_payload(secrets))
    if not sel.interactive and not sel.tty:
        sock.shutdown(socket.SHUT_WR)
    return True, leftover
