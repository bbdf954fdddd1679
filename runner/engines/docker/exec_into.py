"""``exec NAME [-i] [-t] -- CMD``: a command in one of the runner's running containers, as ``docker exec``.

Only the caller's own runner containers (by label, as ``logs`` and ``down``). The command
gets the job's environment, secrets included, the way the job got it: the container's
public env, and the job's secret values through the stdin shim (``shim``), written into
the exec's stdin, so no value is on the exec's command line or in its inspect. Which
secrets: the names the run's record lists as forwarded secrets, resolved in the run's own
scope (its directory's config and env file, as ``logs`` masks it). The output passes
through that scope's masker; the exit code is the command's.
"""

from __future__ import annotations

import socket
import sys

from runner.clients.engine_api import ApiError
from runner.engines.docker import shim
from runner.engines.docker.verbs import NOT_FOUND
from runner.errors import RuntimeFailure, UsageError
from runner.options import Selection
from runner.secrets import Secret, SecretScope
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
    secrets, scope = _job_secrets(info, name, sel, context.scope, out)
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


def _job_secrets(info: dict, name: str, sel: Selection, scope: SecretScope, out: Output) -> tuple[dict[str, Secret] | None, SecretScope]:
    """(the job's secrets by name, the scope that masks the output). None: the job was not started
    through the shim (no secret, or ``secrets_via: env``: they are in its environment already)."""
    from runner.runs.reading import run_of_container, run_scope

    if shim.SHIM_ARGV0 not in ((info.get("Config") or {}).get("Entrypoint") or []):
        return None, scope
    record = run_of_container(info["Id"], name)
    if record is None:
        out.warn(f"no run record of {name} for this user: the command runs without the job's secrets")
        return {}, scope
    names = {entry["name"] for entry in record.get("env") or [] if entry.get("secret")}
    own = run_scope(record, sel.sources, out)
    secrets: dict[str, Secret] = {}
    for secret_name, value in own.named:
        if secret_name in names:
            secrets.setdefault(secret_name, value)  # the first source wins, as the job's plan read them
    missing = sorted(names - set(secrets))
    if missing:
        out.warn(f"not in the run's scope now, not passed to the command: {', '.join(missing)}")
    return secrets, own


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
