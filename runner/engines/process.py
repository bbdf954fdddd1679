"""The process engine: a plan's command as a child process on this host, no container (``direct``).

It is given the plan's job (``JobSpec``) alone: a host process has no container to read a
container field into. The child's environment is the job's: for a direct job (``JobSpec.inherit_env``) the
user's environment less the secrets the policy does not forward (``runner.host_env``),
plus the forwarded variables (secrets included, revealed here and nowhere else); with
``direct.clean_env: true`` only the forwarded ones and a fixed default ``PATH``. Its output passes through the scope's masker; SIGINT and
SIGTERM are forwarded to its process group, which is killed after the stop
timeout, so nothing outlives the runner; the exit code is the child's.
"""

from __future__ import annotations

import os
import selectors
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Mapping

from runner.engines.base import Connection, EngineBase, Launched, RunContext
from runner.engines.output import Sink
from runner.engines.signals import SignalGuard, interrupted
from runner.errors import ConfigError, Problem
from runner.host_env import Withheld, host_environment
from runner.launch_plan import JobSpec, LaunchPlan
from runner.secrets import MASK
from runner.secrets.argv import refuse_secret_argv

# What a container image's PATH usually is: the child needs one, and the host's may not be forwarded.
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class ProcessRequest:
    """One child process, complete: the program as resolved on this host's PATH when the request was
    built (``program``, None: not found, and the launch refuses; looked up on the child's own PATH),
    its arguments, directory and exactly the environment it gets (the inherited names and the job's
    forwarded ones, or only the forwarded ones and a default ``PATH``). ``launch`` execs this."""

    job: JobSpec
    argv: tuple[str, ...]
    cwd: str
    env_names: tuple[str, ...] = field(default=())
    program: str | None = None  # argv[0] resolved (``which``), decided before the dry run
    # From the user's environment, beside the plan's own (a Slurm node's SLURM_* …): public by name.
    inherited: tuple[tuple[str, str], ...] = ()
    withheld: tuple[Withheld, ...] = ()

    @classmethod
    def of(cls, job: JobSpec, user_env: Mapping[str, str], cwd: str | None = None) -> "ProcessRequest":
        """The request for ``job`` in ``user_env`` (this host's, or a Slurm node's)."""
        forwarded = tuple(d.name for d in job.forwarded)
        found = host_environment(user_env, set(forwarded), job.secret_rules) if job.inherit_env else None
        request = cls(job, tuple(job.command), cwd or job.workdir or os.getcwd(), forwarded,
                      inherited=found.inherited if found else (), withheld=found.withheld if found else ())
        return replace(request, program=_program(request.argv, request.environment().get("PATH")))

    def environment(self) -> dict[str, str]:
        """The child's public environment (the launch adds the secrets' values by name, nothing else)."""
        env = dict(self.inherited)
        env.update(self.job.public_env())
        if not self.job.inherit_env:
            env.setdefault("PATH", DEFAULT_PATH)
        return env

    def with_run_env(self, pairs: dict[str, str]) -> "ProcessRequest":
        job = self.job.with_env(pairs, "tracker run")
        names = {d.name for d in job.forwarded}
        return replace(self, job=job, env_names=tuple(names), inherited=tuple(kv for kv in self.inherited if kv[0] not in names))

    def render(self) -> str:
        found = self.program or f"(not found on this host: {self.argv[0] if self.argv else 'no command'})"
        own = [d for d in self.job.forwarded if d.reason != "inherited"]
        inherited = sorted({d.name for d in self.job.forwarded if d.reason == "inherited"} | {n for n, _ in self.inherited})
        title = "environment (your environment, less the withheld names, plus these):" if self.job.inherit_env \
            else "environment (only these):"
        lines = [f"command  {' '.join(shlex.quote(a) for a in self.argv)}", f"program  {found}", f"workdir  {self.cwd}", title]
        for d in own:
            lines.append(f"  {d.name}={MASK if d.secret else d.value}{' [secret]' if d.secret else ''}")
        if not self.job.inherit_env and "PATH" not in self.env_names:
            lines.append(f"  PATH={DEFAULT_PATH}   (default)")
        if inherited:
            lines.append(f"inherited ({len(inherited)}): {', '.join(inherited)}")
        withheld = self._withheld()
        if withheld:
            lines.append("withheld:")
            lines += [f"  {name}   ({reason})" for name, reason in withheld.items()]
        return "\n".join(lines)

    def _withheld(self) -> dict[str, str]:
        found = {d.name: d.skip_reason for d in self.job.skipped if d.reason == "inherited"}
        found.update((w.name, w.reason) for w in self.withheld)
        return dict(sorted(found.items()))

    def to_dict(self) -> dict:
        return {
            "command": list(self.argv), "program": self.program, "workdir": self.cwd,
            "env": {d.name: (MASK if d.secret else d.value) for d in self.job.forwarded} | dict(self.inherited),
            "environment": {**self.environment(), **{name: MASK for name in self.job.secret_env()}},
            "secrets": [d.name for d in self.job.forwarded if d.secret],
            "inherit_env": self.job.inherit_env,
            "withheld": [{"name": name, "reason": reason} for name, reason in self._withheld().items()],
        }


def _program(argv: tuple[str, ...], path: str | None) -> str | None:
    """``argv[0]`` as the child's own ``PATH`` finds it; None when it is not there or not executable."""
    if not argv:
        return None
    program = argv[0] if "/" in argv[0] else shutil.which(argv[0], path=path)
    return program if program is not None and os.access(program, os.X_OK) else None


class ProcessEngine(EngineBase):
    name = "process"
    # No container: the job writes on the host (no mount decides where tracker outputs go), and a launch
    # flag that sets a ``ContainerSpec`` field (--memory, --volume, --device …) is refused, exit 2.
    runs_in_container = False
    inherits_env = True  # a host process: planned from the user's environment (runner.host_env)
    # No verbs (ps, logs, down, …): a process job lives only as long as the runner that follows it;
    # `runs --engine process` and `logs RUN` read its record.

    def settings(self, config, options) -> None:
        return None  # no options of its own: the plan says everything

    def refusals(self, plan: LaunchPlan, config) -> list[Problem]:
        """The working directory and the program, as the request will find them."""
        from runner.engines.refusals import host_program  # the submitting side's: a node agent never asks

        return host_program(ProcessRequest.of(plan.job, os.environ), config)

    def preflight(self, plan: LaunchPlan, ctx: RunContext) -> None:
        pass  # the program is resolved in the request; a missing one is a clear error at launch

    def resolve(self, request: ProcessRequest, ctx: RunContext, dry_run: bool = False) -> ProcessRequest:
        return request  # nothing the host must be asked first

    def request(self, plan: LaunchPlan, ctx: RunContext) -> ProcessRequest:
        return ProcessRequest.of(plan.job, os.environ)  # the job alone: no container field can reach a host process

    def dry_run(self, request: ProcessRequest, ctx: RunContext) -> None:
        if ctx.out.json_mode:
            ctx.out.json(request.to_dict())
        else:
            ctx.out.result(request.render())

    def launch(self, request: ProcessRequest, connection: Connection) -> Launched:
        argv = list(request.argv)
        if not argv:
            raise ConfigError(Problem("no command given", hint="put the command after --"))
        refuse_secret_argv(argv, connection.scope.masker, argv[0])
        if request.program is None:  # refused before the dry run (``refusals``); gone since: the same error
            from runner.engines.refusals import not_installed

            raise ConfigError(not_installed(argv[0]))
        found = request.program
        env = request.environment()
        for name, secret in request.job.secret_env().items():
            env[name] = secret.reveal()  # the one place a value leaves the runner: the child's environment
        run = _Run(request.job.stop_timeout)  # signals are forwarded from before the child exists until watch has cleaned up
        try:
            run.proc = subprocess.Popen([found, *argv[1:]], cwd=request.cwd, env=env, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        except BaseException:
            run.restore()
            raise
        if run.got is not None:
            _signal_group(run.proc, run.got)
        return Launched(str(run.proc.pid), request.job.name, run)

    def announce(self, launched: Launched, ctx: RunContext, detached: bool) -> None:
        ctx.out.debug(f"started process {launched.id}")

    def group_title(self, launched: Launched, request: ProcessRequest) -> str:
        return f"job output: {' '.join(request.argv[:4])} (process {launched.id})"

    def watch(self, launched: Launched, ctx: RunContext, on_running: Callable[[], None] | None = None) -> int:
        run: _Run = launched.state
        proc = run.proc
        stop_timeout = launched.state.stop_timeout
        sinks = {proc.stdout: Sink(sys.stdout.fileno(), ctx.scope.masker, ctx.tail),
                 proc.stderr: Sink(sys.stderr.fileno(), ctx.scope.masker, ctx.tail)}
        sel = selectors.DefaultSelector()
        for pipe in sinks:
            sel.register(pipe, selectors.EVENT_READ)
        if on_running:
            on_running()
        try:
            deadline = None
            while sel.get_map():
                if run.got is not None and deadline is None:
                    deadline = time.monotonic() + stop_timeout
                if deadline is not None and time.monotonic() > deadline:
                    _signal_group(proc, signal.SIGKILL)
                for key, _ in sel.select(timeout=0.5):
                    data = os.read(key.fileobj.fileno(), 1 << 16)
                    if data:
                        sinks[key.fileobj].write(data)
                    else:
                        sel.unregister(key.fileobj)
            code = proc.wait()
        finally:
            for sink in sinks.values():
                sink.close()
            sel.close()
            if proc.poll() is None:  # the runner itself failed: nothing outlives it
                _signal_group(proc, signal.SIGKILL)
                proc.wait()
            _signal_group(proc, signal.SIGKILL)  # the child's own children, if any are left
            run.restore()
        if run.got is not None:
            return interrupted(run.got, f"process {proc.pid} stopped", ctx.out)
        return 128 - code if code < 0 else code

    def audit(self, launched: Launched, ctx: RunContext) -> list:
        return []  # nothing stored: no container, no file

    def finished(self, launched: Launched, ctx: RunContext, exit_code: int) -> dict:
        return {}


class _Run(SignalGuard):
    """The child and the SIGINT/SIGTERM forwarding around it (the first signal decides 130/143)."""

    def __init__(self, stop_timeout: float) -> None:
        super().__init__()
        self.stop_timeout = stop_timeout  # SIGKILL this long after a forwarded signal (the plan's)
        self.proc: subprocess.Popen | None = None
        self.install()

    def handle(self, signum: int) -> None:
        if self.proc is not None:
            _signal_group(self.proc, signum)


def _signal_group(proc: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(proc.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass
