"""Running one container (runner.engines.docker.run) against a loopback daemon: create's refusals in the
runner's words, nothing left behind when the start fails, the job's output demultiplexed and masked, its
exit code, the container removed; the secrets handed to the shim (after its ready marker with a terminal,
never when it ends first or a signal stops the wait; with -i the job's stdin left open for the user's);
the signal guard's deferral; the daemon's errors as config hints."""

from __future__ import annotations

import io
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

import pytest

from loopback_servers import Server
from plan_factory import plan_from_layer
from runner.clients.engine_api import Engine
from runner.engines.docker import shim
from runner.engines.docker.request import make_request
from runner.engines.docker.run import _hand_over, _Interrupted, _SignalGuard, daemon_hint, launch, pump, watch
from runner.engines.output import Sink
from runner.errors import ConfigError, Interrupted, RuntimeFailure
from runner.options import LaunchFlags
from runner.secrets import secret_scope
from runner.ui import Output

CANARY = "run-canary-0a1b2c3d"
MASKER = secret_scope(extra=[("HF_TOKEN", CANARY)]).masker


def frame(stream: int, data: bytes) -> bytes:
    return struct.pack(">BxxxI", stream, len(data)) + data


def _request(env=("A=1",), host=None, secrets_via="env", entrypoint=None, **request_kw):
    layer = {"container": {"gpu": "none", "secrets_via": secrets_via, "options": {
        "image": "img:1", "privileged": False, "ulimit": [], "group-add": [], "env": list(env)}}}
    _, planned = plan_from_layer(layer, ["train"], host=host or {"PATH": "/usr/bin"}, flags=LaunchFlags(name="j", entrypoint=entrypoint))
    return make_request(planned.require(), {}, run_id="r1", **request_kw)


def _shim_request(secret: str, tty: bool = False, interactive: bool = False):
    """HF_TOKEN (``secret``) through the stdin shim; no image entrypoint to resolve (``--entrypoint ""``)."""
    return _request(env=("HF_TOKEN", "A=1"), host={"HF_TOKEN": secret, "PATH": "/usr/bin"}, secrets_via="stdin",
                    entrypoint="", tty=tty, interactive=interactive)


def daemon(create=(201, {"Id": "c1"}), start=(204, b""), attach=b"", wait=0):
    """A Docker daemon on loopback: each call answered as given, every request recorded."""
    def answer(server, request):
        path, method = request["path"].split("?")[0], request["method"]
        json_ = {"Content-Type": "application/json"}
        if path == "/_ping":
            return 200, {"Api-Version": "1.43"}, b"OK"
        if path.endswith("/containers/create"):
            return create[0], json_, create[1]
        if path.endswith("/attach"):
            return 101, {"Content-Type": "application/vnd.docker.raw-stream", "Upgrade": "tcp"}, attach
        if path.endswith("/archive"):  # has_path: the image has /bin/sh for the shim
            return 200, {}, b""
        if path.endswith("/start"):
            return start[0], json_, start[1]
        if path.endswith("/wait"):
            return 200, json_, {"StatusCode": wait}
        if method == "DELETE":
            return 204, {}, b""
        return 404, json_, {"message": f"unexpected {method} {path}"}
    return Server(answer)


def _calls(server) -> list[str]:
    return [f"{r['method']} {r['path'].split('?')[0].split('/', 2)[-1]}" for r in server.requests if r["path"] != "/_ping"]


class _AttachedTo(Engine):
    """The loopback daemon for every call but the attach, whose stream is ``stream`` (one end of a
    socketpair: the other is the shim's stdin and terminal, which a loopback HTTP server cannot carry
    past its 101 answer). ``early``: the stream bytes the attach had already read."""

    def __init__(self, host: str, stream: socket.socket, early: bytes):
        super().__init__(host=host)
        self._stream, self._early = stream, early

    def attach(self, container_id: str, stdin: bool):
        return self._stream, self._early


def _read_to_eof(sock: socket.socket) -> bytes:
    sock.settimeout(5)
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


DUMP = "import json, os, sys; sys.stdout.write(json.dumps({k: os.environ.get(k) for k in sys.argv[1:]}))"


def _exported_by_the_shim(payload: bytes, *names: str) -> dict:
    """What the shim's own reader (its /bin/sh script) exports from ``payload``: the decoder the job gets."""
    result = subprocess.run(["/bin/sh", "-c", shim.SHIM, shim.SHIM_ARGV0, sys.executable, "-c", DUMP, *names],
                            input=payload, capture_output=True, timeout=30, env={"PATH": os.environ["PATH"]})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("create, error", [
    ((409, {"message": "Conflict. The container name \"/j\" is already in use"}), "a container named j already exists"),
    ((404, {"message": "No such image: img:1"}), "image img:1 not found locally"),
    ((500, {"message": "error setting rlimit type 7: operation not permitted"}), "the container could not be created: error setting rlimit type 7"),
])
def test_a_refused_create_is_said_in_the_runners_words_and_nothing_else_is_asked(create, error):
    with daemon(create=create) as server:
        with pytest.raises(RuntimeFailure) as info:
            launch(Engine(host=f"tcp://{server.netloc}"), _request(), MASKER, Output())
        assert _calls(server) == ["POST containers/create"]
    assert info.value.message.startswith(error)


def test_a_start_that_fails_removes_the_container_and_hints_at_the_cause():
    with daemon(start=(500, {"message": "error gathering device information while adding custom device"})) as server:
        with pytest.raises(RuntimeFailure, match="the container could not be started") as info:
            launch(Engine(host=f"tcp://{server.netloc}"), _request(), MASKER, Output())
        assert _calls(server) == ["POST containers/create", "POST containers/c1/attach", "POST containers/c1/start", "DELETE containers/c1"]
    assert "use --gpu none or the right flavor" in info.value.hint


def test_a_secret_in_the_public_body_is_refused_before_the_create():
    request = _request(env=(f"NOTE=see {CANARY}",))
    with daemon() as server:
        with pytest.raises(ConfigError):
            launch(Engine(host=f"tcp://{server.netloc}"), request, MASKER, Output())
        assert _calls(server) == []


def test_the_job_runs_its_output_is_masked_and_its_container_removed(capsys):
    stream = frame(1, b"step 1\n") + frame(2, f"token {CANARY[:7]}".encode()) + frame(2, f"{CANARY[7:]} end\n".encode())
    stdout = io.BytesIO()
    with daemon(attach=stream, wait=3) as server:
        eng = Engine(host=f"tcp://{server.netloc}")
        run = launch(eng, _request(), MASKER, Output())
        assert watch(run, MASKER, Output(), keep=False, tail=None, stdout=stdout) == 3
        assert _calls(server)[-2:] == ["POST containers/c1/wait", "DELETE containers/c1"]
    assert stdout.getvalue() == b"step 1\n"
    err = capsys.readouterr().err
    assert "token *** end" in err and CANARY not in err


def test_a_kept_container_is_not_removed():
    with daemon(attach=frame(1, b"ok\n")) as server:
        run = launch(Engine(host=f"tcp://{server.netloc}"), _request(), MASKER, Output())
        assert watch(run, MASKER, Output(), keep=True, tail=None, stdout=io.BytesIO()) == 0
        assert not any(call.startswith("DELETE") for call in _calls(server))


@pytest.mark.parametrize("tty, shim_says, passed_on", [
    (False, b"", b"<"),  # a batch job: the secrets, then its stdin's EOF
    (True, b"motd " + shim.READY + b"$ ", b"<motd $ "),  # a terminal: after the marker, which the pump never prints
])
def test_launch_hands_the_secrets_to_the_shim_and_passes_its_output_on(canary, tty, shim_says, passed_on):
    secret = canary["HF_TOKEN"]
    request = _shim_request(secret, tty=tty)
    assert request.use_shim and request.config.get("Tty", False) is tty
    ours, shim_end = socket.socketpair()
    with daemon() as server, ours, shim_end:
        shim_end.sendall(shim_says)
        run = launch(_AttachedTo(f"tcp://{server.netloc}", ours, b"<"), request, MASKER, Output())
        run.guard.restore()
        if tty:  # a terminal's stdin stays open (its EOF would end the job's output): ended here to read it all
            ours.shutdown(socket.SHUT_WR)
        received = _read_to_eof(shim_end)
        assert _calls(server) == ["POST containers/create", "HEAD containers/c1/archive", "POST containers/c1/start"]
    assert run.leftover == passed_on
    assert received == shim.encode_payload(request.plan.job.secret_env())
    assert _exported_by_the_shim(received, "HF_TOKEN", "A") == {"HF_TOKEN": secret, "A": None}


def test_with_a_terminal_nothing_is_written_before_the_shims_ready_marker(canary):
    secret = canary["HF_TOKEN"]
    request = _shim_request(secret, tty=True)
    ours, shim_end = socket.socketpair()
    handed: dict = {}
    with ours, shim_end:
        shim_end.sendall(b"motd " + shim.READY[:5])  # the marker not yet whole: the terminal still echoes
        handing = threading.Thread(target=lambda: handed.update(left=_hand_over(ours, b"<", request, _SignalGuard())))
        handing.start()
        early = select.select([shim_end], [], [], 0.3)[0]
        shim_end.sendall(shim.READY[5:] + b"$ ")
        handing.join(5)
        ours.shutdown(socket.SHUT_WR)
        received = _read_to_eof(shim_end)
    assert early == [], "the runner wrote to the terminal before the shim turned its echo off"
    assert handed["left"] == b"<motd $ "
    assert _exported_by_the_shim(received, "HF_TOKEN") == {"HF_TOKEN": secret}


def test_a_shim_that_ends_before_its_ready_marker_is_written_no_secret(canary):
    secret = canary["HF_TOKEN"]
    request = _shim_request(secret, tty=True)
    refusal = b"primus-runner: this image has no working stty\r\n"
    ours, shim_end = socket.socketpair()
    with ours, shim_end:
        shim_end.sendall(refusal)
        shim_end.shutdown(socket.SHUT_WR)  # the shim exits; its end still receives whatever is written
        left = _hand_over(ours, b"<", request, _SignalGuard())
        ours.shutdown(socket.SHUT_WR)
        received = _read_to_eof(shim_end)
    assert left == b"<" + refusal  # the refusal is printed (masked) by the pump
    escaped = shim.encode_payload(request.plan.job.secret_env()).split(b"=", 1)[1].rstrip(b"\n")
    assert secret.encode() not in received and escaped not in received  # the payload carries the value octal-escaped
    assert received == b""


def _signal_once_started(server, signum: int, shim_end: socket.socket) -> None:
    """``signum`` to the runner's main thread (where Ctrl-C's handler runs and the recv is interrupted) once
    the container is started and the runner waits for the ready marker. Should the wait outlive the signal,
    the rest of the marker follows, so a runner that ignores it is seen writing instead of hanging."""
    deadline = time.monotonic() + 5
    while not any(r["path"].split("?")[0].endswith("/start") for r in server.requests) and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.05)  # into await_ready's recv
    signal.pthread_kill(threading.main_thread().ident, signum)
    if not select.select([shim_end], [], [], 0.5)[0]:  # readable: the runner closed its end
        shim_end.sendall(shim.READY[5:] + b"$ ")


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_waiting_for_the_ready_marker_removes_the_container_and_writes_no_secret(canary, signum, code):
    secret = canary["HF_TOKEN"]
    request = _shim_request(secret, tty=True)
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    ours, shim_end = socket.socketpair()
    with daemon() as server, ours, shim_end:
        shim_end.sendall(b"motd " + shim.READY[:5])  # the shim's terminal still echoes
        sender = threading.Thread(target=_signal_once_started, args=(server, signum, shim_end))
        sender.start()
        with pytest.raises(Interrupted) as info:
            launch(_AttachedTo(f"tcp://{server.netloc}", ours, b""), request, MASKER, Output())
        sender.join(5)
        received = _read_to_eof(shim_end)
        calls = _calls(server)
    assert info.value.exit_code == code
    assert info.value.message == f"interrupted ({signal.Signals(signum).name}): while starting j; the container was removed"
    assert calls == ["POST containers/create", "HEAD containers/c1/archive", "POST containers/c1/start", "DELETE containers/c1"]
    escaped = shim.encode_payload(request.plan.job.secret_env()).split(b"=", 1)[1].rstrip(b"\n")
    assert secret.encode() not in received and escaped not in received  # the payload carries the value octal-escaped
    assert received == b""
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before  # the guard is gone


def test_with_i_and_no_terminal_the_users_stdin_follows_the_secrets_on_the_open_socket(canary, stdin_pipe):
    secret = canary["HF_TOKEN"]
    request = _shim_request(secret, interactive=True)
    assert request.use_shim and request.interactive and not request.config.get("Tty")
    payload = shim.encode_payload(request.plan.job.secret_env())
    user_types = stdin_pipe  # the user's stdin is a pipe, not a terminal: -i alone
    ours, shim_end = socket.socketpair()
    job: dict = {}

    def the_job():  # the shim's stdin: the secrets, then the user's until their EOF; then the job ends
        try:
            job["stdin"] = _read_to_eof(shim_end)
        finally:  # also when nothing came within the read's timeout: the job ends, so watch returns
            shim_end.shutdown(socket.SHUT_WR)

    with daemon() as server, ours, shim_end:
        run = launch(_AttachedTo(f"tcp://{server.netloc}", ours, b""), request, MASKER, Output())
        shim_end.setblocking(False)
        assert shim_end.recv(len(payload)) == payload
        with pytest.raises(BlockingIOError):  # more may come: the runner did not end the job's stdin
            shim_end.recv(1)
        os.write(user_types, b"user line\n")
        os.close(user_types)
        reader = threading.Thread(target=the_job)
        reader.start()
        assert watch(run, MASKER, Output(), keep=False, tail=None, stdout=io.BytesIO()) == 0
        reader.join(5)
        assert _calls(server)[-2:] == ["POST containers/c1/wait", "DELETE containers/c1"]
    assert job.get("stdin") == b"user line\n"
    assert _exported_by_the_shim(payload + job["stdin"], "HF_TOKEN") == {"HF_TOKEN": secret}


def test_pump_demultiplexes_frames_split_anywhere_and_masks_across_them():
    ours, theirs = socket.socketpair()
    out, err = io.BytesIO(), io.BytesIO()
    data = frame(1, b"a" * 10) + frame(2, f"x{CANARY}y".encode()) + frame(1, b"b\n")
    with ours:
        theirs.sendall(data[5:17])
        theirs.sendall(data[17:])
        theirs.close()
        out_sink, err_sink = Sink(out, MASKER, None), Sink(err, MASKER, None)
        pump(ours, data[:5], out_sink, err_sink)
        out_sink.close()
        err_sink.close()
    assert out.getvalue() == b"a" * 10 + b"b\n" and err.getvalue() == b"x***y"


def test_pump_raw_is_one_stream_as_the_terminal_wrote_it():
    ours, theirs = socket.socketpair()
    out, err = io.BytesIO(), io.BytesIO()
    with ours:
        theirs.sendall(f"\x01\x00{CANARY}\r\n".encode())
        theirs.close()
        sink = Sink(out, MASKER, None)
        pump(ours, b"$ ", sink, Sink(err, MASKER, None), raw=True)
        sink.close()
    assert out.getvalue() == b"$ \x01\x00***\r\n" and err.getvalue() == b""


def test_the_guard_defers_a_signal_until_a_checkpoint_and_raises_it_while_armed():
    guard = _SignalGuard().install()
    try:
        os.kill(os.getpid(), signal.SIGTERM)  # during a call that must complete: only recorded
        assert guard.got == signal.SIGTERM
        with pytest.raises(_Interrupted) as info:
            guard.check()
        assert info.value.signum == signal.SIGTERM
        guard.got = None
        guard.arm()
        with pytest.raises(_Interrupted):
            os.kill(os.getpid(), signal.SIGINT)  # while waiting for the job: raised at once
            signal.sigtimedwait([], 0)  # a bytecode boundary for the handler to run at
        assert not guard.armed  # once: cleanup is never interrupted again
        os.kill(os.getpid(), signal.SIGINT)
        assert guard.got == signal.SIGINT
    finally:
        guard.restore()


@pytest.mark.parametrize("message, hint_part", [
    ("OCI runtime create failed: apply caps: operation not permitted", "privileged: false"),
    ("error setting rlimit type 7", "lower container.options.ulimit"),
    ("Unable to find group render", "container.options.group-add"),
    ("error gathering device information while adding custom device \"/dev/kfd\"", "--gpu none"),
    ("statfs /dev/mqueue: permission denied", "--ipc private"),
    ("could not select device driver \"\" with capabilities: [[gpu]]", "nvidia-container-toolkit"),
    ("no space left on device", None),
])
def test_a_daemons_refusal_is_given_a_config_hint(message, hint_part):
    hint = daemon_hint(message)
    assert (hint is None) if hint_part is None else (hint_part in hint)
