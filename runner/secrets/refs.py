"""Secret references: the config names where a secret lives, never its value.

```yaml
secrets:
  HF_TOKEN: pass:ml/hf                      # first line of `pass show ml/hf`
  WANDB_API_KEY: aws-sm:prod/wandb#api_key  # AWS Secrets Manager, a JSON field
  DATABRICKS_TOKEN: cmd:op read op://ml/databricks/token
  MLFLOW_TRACKING_TOKEN: file:/run/secrets/mlflow
  GH_TOKEN: env:GITHUB_TOKEN
```

``parse_refs`` reads the section; ``resolve`` fetches the values a command needs,
once, in parallel, each with a timeout, into ``Secret`` objects only: no value is
written, cached, or put on a command line (a ``cmd:`` program's arguments come from
the config text alone). Every failure is reported at once, naming the reference
(``pass:ml/hf``), never a value; the caller then adds the values to the one secret
scope (``secret_scope(..., extra=...)``).

Exit codes: an entry that does not exist, a program that fails, a file that is missing
or readable by others -> ``ConfigError`` (2); a store that cannot be reached (timeout,
connection refused, client not installed) -> ``EngineUnavailable`` (1).
"""

from __future__ import annotations

import json
import logging
import os
import selectors
import shlex
import signal
import stat
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Callable, Sequence

from runner.errors import ConfigError, EngineUnavailable, Problem
from runner.secrets import Secret, secret_scope
from runner.secrets.names import NAME_RE, is_runner_variable, shown_key

SCHEMES = ("env", "file", "pass", "aws-sm", "cmd")
AWS_EXTRA_HINT = "pip install 'primus-runner[aws]'"
# A secret file or output is small; a larger one is a wrong path or program, not a credential.
_MAX_FILE_BYTES = 1 << 20
_MAX_OUTPUT_BYTES = 1 << 20
# The tail of a failing program's stderr kept in memory (an error shows its last lines).
_STDERR_KEEP_BYTES = 64 << 10
# How long past the per-reference timeout to wait for a worker to report its own
# timeout (and kill its program) before giving up on it.
_GRACE = 2.0
# How much of a failing program's (masked) stderr an error shows.
_STDERR_LINES = 5
_STDERR_CHARS = 500

Lookup = Callable[[str], "str | Secret | None"]
Mask = Callable[[str], str]


@dataclass(frozen=True)
class SecretRef:
    """One entry of ``secrets:``. ``source`` is the reference as written: it says
    where the value lives, so it is safe to print."""

    name: str  # the variable it defines, e.g. HF_TOKEN
    source: str  # "pass:ml/hf"
    scheme: str  # env | file | pass | aws-sm | cmd
    target: str  # what follows "scheme:"
    where: str | None = None  # file:line of the entry

    def __str__(self) -> str:
        return f"{self.name} ({self.source})"


# ---------------------------------------------------------------- parsing


def parse_refs(config) -> tuple[list[SecretRef], list[Problem]]:
    """The references of the top-level ``secrets:`` mapping of a ``runner.config.Config``,
    and a Problem (with file:line) for each invalid name or reference."""
    section = config.get("secrets")
    if section is None:
        return [], []
    if not isinstance(section, dict):
        return [], [
            Problem(
                "secrets: expected a mapping of NAME: reference",
                where=config.where(("secrets",)),
                hint="e.g. HF_TOKEN: pass:ml/hf",
            )
        ]
    refs: list[SecretRef] = []
    problems: list[Problem] = []
    denied = {str(n) for n in config.get("passthrough", "deny", default=[]) or []}
    for name, source in section.items():
        ref = parse_ref(name, source, config.where(("secrets", name)))
        if isinstance(ref, Problem):
            problems.append(ref)
        elif ref.scheme == "env" and (ref.target in denied or is_runner_variable(ref.target)):
            problems.append(Problem(  # a rename must not carry a denied variable into the job under another name
                f"secrets.{name}: env:{ref.target} names a variable that is never forwarded (passthrough.deny, "
                f"or one that configures the runner)", where=ref.where,
                hint=f"remove the reference, or take {ref.target} off passthrough.deny in your own config"))
        else:
            refs.append(ref)
    return refs, problems


def parse_ref(name, source, where: str | None = None) -> SecretRef | Problem:
    """One entry: a SecretRef, or the Problem with it.

    A value that is not a reference is never echoed: it may be the secret itself,
    pasted where its reference belongs.
    """
    if not isinstance(name, str) or not NAME_RE.match(name):
        return Problem(
            f"secrets: '{shown_key(name)}' is not a variable name",
            where=where,
            hint="letters, digits and _, not starting with a digit",
        )
    expected = "env:NAME, file:/path, pass:path, aws-sm:secret-id[#key] or cmd:program args"
    scheme, sep, target = source.partition(":") if isinstance(source, str) else ("", "", "")
    if not sep or scheme not in SCHEMES:
        return Problem(
            f"secrets.{shown_key(name)}: not a secret reference (the value is not shown)",
            where=where,
            hint=f"write where the secret lives: {expected}",
        )
    bad = None
    if "\n" in target or "\0" in target:
        bad = "a reference is one line"
    elif not target.strip():
        bad = f"nothing after '{scheme}:'"
    elif scheme == "env" and not NAME_RE.match(target):
        bad = f"'{target}' is not a variable name"
    elif scheme == "file" and not os.path.isabs(os.path.expanduser(target)):
        bad = "the path must be absolute (or start with ~/)"
    elif scheme == "aws-sm":
        secret_id, hashmark, key = target.partition("#")
        if not secret_id.strip():
            bad = "no secret id before '#'"
        elif hashmark and not key:
            bad = "no JSON key after '#'"
    elif scheme == "cmd":
        try:
            if not shlex.split(target):
                bad = "no program"
        except ValueError as exc:
            bad = f"cannot split the command line ({exc})"
    if bad:
        return Problem(f"secrets.{shown_key(name)}: {source}: {bad}", where=where, hint=f"expected {expected}")
    return SecretRef(name=name, source=source, scheme=scheme, target=target, where=where)


# ---------------------------------------------------------------- resolution


class _Missing(Exception):
    """The store answered: no such entry, the program failed, the file is refused (exit 2)."""

    def __init__(self, message: str, stderr: bytes = b"", foreign: str = "", hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.stderr = stderr  # the program's stderr, shown only after masking
        self.foreign = foreign  # other text from the store (an AWS error message), masked too
        self.hint = hint


class _Unreachable(_Missing):
    """The store could not be reached: timeout, connection refused, client missing (exit 1)."""


@dataclass
class _Outcome:
    value: Secret | None = None
    failure: _Missing | None = None


def resolve(
    refs: Sequence[SecretRef],
    lookup: Lookup,
    *,
    timeout: float = 10.0,
    mask: Mask | None = None,
) -> dict[str, Secret]:
    """The value of each reference given, as ``{name: Secret}``.

    Every reference is fetched once, all in parallel, each within ``timeout`` seconds.
    ``lookup(NAME)`` answers ``env:NAME`` (the environment and env file). ``mask`` is the
    caller's masker (``scope.masker.mask``): a failing program's stderr is shown only
    after it, and after masking the values resolved here.

    Raises ``ConfigError`` (exit 2) listing every failing reference when any entry is
    missing or refused (a retry cannot help), else ``EngineUnavailable`` (exit 1)
    listing the stores that could not be reached.
    """
    outcomes = _resolve_all(refs, lookup, timeout)
    failed = [(ref, o.failure) for ref, o in zip(refs, outcomes) if o.failure is not None]
    if not failed:
        return {ref.name: o.value for ref, o in zip(refs, outcomes) if o.value is not None}
    masking = _masking(refs, outcomes, mask)
    definite = [(ref, f) for ref, f in failed if not isinstance(f, _Unreachable)]
    if definite:
        problems = [
            Problem(f"secret {ref}: {_detail(f, masking, unreachable_note=True)}", where=ref.where, hint=f.hint)
            for ref, f in failed
        ]
        raise ConfigError(problems)
    lines = [f"{ref}: {_detail(f, masking)}" + (f" ({f.hint})" if f.hint else "") for ref, f in failed]
    if len(lines) == 1:
        message = f"secret store not reachable for {lines[0]}"
    else:
        message = f"secret stores not reachable for {len(lines)} references:\n  " + "\n  ".join(lines)
    raise EngineUnavailable(message, hint="make each store reachable (client installed, logged in, network up), then retry")


def check_refs(
    refs: Sequence[SecretRef],
    lookup: Lookup,
    timeout: float = 10.0,
    *,
    mask: Mask | None = None,
) -> list[dict]:
    """For ``check``: each reference resolved and reported, never its value:
    ``[{"name", "source", "found", "error", "unreachable"}]``."""
    return resolve_and_report(refs, lookup, timeout, mask=mask)[1]


def resolve_and_report(
    refs: Sequence[SecretRef],
    lookup: Lookup,
    timeout: float = 10.0,
    *,
    mask: Mask | None = None,
) -> tuple[dict[str, Secret], list[dict]]:
    """``check``'s one resolution: the values found (for planning) and ``check_refs``'s report."""
    outcomes = _resolve_all(refs, lookup, timeout)
    masking = _masking(refs, outcomes, mask)
    report = []
    for ref, outcome in zip(refs, outcomes):
        failure = outcome.failure
        error = None
        if failure is not None:
            error = _detail(failure, masking) + (f" ({failure.hint})" if failure.hint else "")
        report.append(
            {
                "name": ref.name,
                "source": ref.source,
                "found": failure is None,
                "error": error,
                "unreachable": isinstance(failure, _Unreachable),
            }
        )
    return {ref.name: o.value for ref, o in zip(refs, outcomes) if o.value is not None}, report


def _masking(refs: Sequence[SecretRef], outcomes: list[_Outcome], mask: Mask | None) -> Mask:
    """The caller's masker, then one for the values just resolved (the caller's scope
    was built before they existed)."""
    resolved = [(ref.name, o.value) for ref, o in zip(refs, outcomes) if o.value is not None]
    own = secret_scope(extra=resolved).masker.mask

    def masking(text: str) -> str:
        return own(mask(text) if mask else text)

    return masking


def _detail(failure: _Missing, masking: Mask, unreachable_note: bool = False) -> str:
    text = failure.message
    if unreachable_note and isinstance(failure, _Unreachable):
        text = f"not reachable: {text}"
    if failure.foreign:
        text += f": {_clip(masking(failure.foreign))}"
    if failure.stderr:
        # Mask the whole stream before cutting it, so a cut never leaves part of a value.
        stderr = masking(failure.stderr.decode("utf-8", "replace")).strip()
        if stderr:
            text += f"; its stderr: {_clip(stderr)}"
    return text


def _clip(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    text = " | ".join(lines[-_STDERR_LINES:])
    return text if len(text) <= _STDERR_CHARS else "..." + text[-_STDERR_CHARS:]


def _resolve_all(refs: Sequence[SecretRef], lookup: Lookup, timeout: float) -> list[_Outcome]:
    """One outcome per reference, in order; one daemon thread each (a hung store client
    must not keep the runner from exiting)."""
    boto3_missing = False
    if any(ref.scheme == "aws-sm" for ref in refs):
        boto3_missing = _import_boto3()  # once, before the clock starts: it takes a while
    results: dict[int, _Outcome] = {}
    lock = threading.Lock()

    def work(index: int, ref: SecretRef) -> None:
        try:
            if ref.scheme == "aws-sm" and boto3_missing:
                raise _Unreachable("boto3 is not installed", hint=AWS_EXTRA_HINT)
            value = _FETCH[ref.scheme](ref, lookup, timeout)
            if not value:
                raise _Missing("resolved to an empty value")
            if "\x00" in value:
                raise _Missing("the value holds a NUL byte, which no environment can hold")
            outcome = _Outcome(value=Secret(value))
        except _Missing as failure:
            outcome = _Outcome(failure=failure)
        except Exception as exc:  # a store client's own error: its type only, its text may hold anything
            outcome = _Outcome(failure=_Missing(f"failed ({type(exc).__name__})"))
        with lock:
            results[index] = outcome

    threads = []
    for index, ref in enumerate(refs):
        thread = threading.Thread(target=work, args=(index, ref), name=f"secret-ref-{ref.name}", daemon=True)
        thread.start()
        threads.append(thread)
    deadline = time.monotonic() + timeout + _GRACE
    try:
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
    except BaseException:  # Ctrl-C, SIGTERM: the programs run in their own sessions, so stop them here
        _kill_live()
        raise
    with lock:
        done = dict(results)
    late = _Outcome(failure=_Unreachable(f"no answer within {timeout:g} s"))
    return [done.get(index, late) for index in range(len(refs))]


# ---------------------------------------------------------------- sources


def _from_env(ref: SecretRef, lookup: Lookup, timeout: float) -> str:
    value = lookup(ref.target)
    if isinstance(value, Secret):
        value = value.reveal()
    if not value:
        raise _Missing(f"{ref.target} is not set in the environment or the env file")
    return value


def _from_file(ref: SecretRef, lookup: Lookup, timeout: float) -> str:
    path = os.path.expanduser(ref.target)
    try:
        # O_NONBLOCK: a FIFO at the path must not hang the open; it is refused below.
        fd = os.open(path, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise _Missing("no such file") from None
    except PermissionError:
        raise _Missing("permission denied") from None
    except OSError as exc:
        raise _Missing(f"cannot open ({exc.strerror})") from None
    try:
        info = os.fstat(fd)  # the file opened, not whatever the path names a moment later
        if not stat.S_ISREG(info.st_mode):
            raise _Missing("not a regular file")
        if info.st_mode & (stat.S_IRGRP | stat.S_IROTH):
            raise _Missing(
                f"readable by group or others (mode {stat.S_IMODE(info.st_mode):04o}); refused",
                hint=f"chmod 600 {path}",
            )
        if info.st_size > _MAX_FILE_BYTES:
            raise _Missing(f"larger than {_MAX_FILE_BYTES >> 20} MiB: not a secret file")
        os.set_blocking(fd, True)
        chunks = []
        size = 0
        while size <= _MAX_FILE_BYTES:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > _MAX_FILE_BYTES:
            raise _Missing(f"larger than {_MAX_FILE_BYTES >> 20} MiB: not a secret file")
    except OSError as exc:
        raise _Missing(f"cannot read ({exc.strerror})") from None
    finally:
        os.close(fd)
    try:
        text = b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError:
        raise _Missing("not UTF-8 text") from None
    if text.endswith("\r\n"):
        return text[:-2]
    return text[:-1] if text.endswith("\n") else text


def _from_pass(ref: SecretRef, lookup: Lookup, timeout: float) -> str:
    # `pass show FOLDER` lists the folder and exits 0: its first line would pass for the value.
    store = os.environ.get("PASSWORD_STORE_DIR") or os.path.expanduser("~/.password-store")
    entry = os.path.join(store, ref.target.strip("/"))
    if os.path.isdir(entry) and not os.path.isfile(entry + ".gpg"):
        raise _Missing("a folder of the password store, not an entry")
    # "--": a path starting with "-" is a path, not an option.
    return _first_line(_run(["pass", "show", "--", ref.target], timeout, "pass show"))


def _from_cmd(ref: SecretRef, lookup: Lookup, timeout: float) -> str:
    argv = shlex.split(ref.target)
    return _first_line(_run(argv, timeout, argv[0]))


def _run(argv: list[str], timeout: float, label: str) -> bytes:
    """The program's stdout; no shell, stdin closed, in its own process group so a
    timeout kills it and its children. Output is bounded: stdout to 1 MiB, stderr to
    its last lines (which reach an error only masked)."""
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
        )
    except FileNotFoundError:
        raise _Unreachable(f"{argv[0]}: program not found", hint=f"install {argv[0]} or put it on PATH") from None
    except PermissionError:
        raise _Missing(f"{argv[0]}: permission denied (not executable)") from None
    except OSError as exc:
        raise _Missing(f"{argv[0]}: cannot run ({exc.strerror})") from None
    with _live_lock:
        _live.add(proc)
    try:
        stdout, stderr = _read_bounded(proc, time.monotonic() + timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise _Unreachable(f"{label} did not answer within {timeout:g} s; killed") from None
    except OverflowError:
        _kill_group(proc)
        raise _Missing(f"{label} printed more than {_MAX_OUTPUT_BYTES >> 20} MiB; killed") from None
    finally:
        with _live_lock:
            _live.discard(proc)
        for pipe in (proc.stdout, proc.stderr):
            pipe.close()
    if proc.returncode != 0:
        how = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exited with {proc.returncode}"
        raise _Missing(f"{label} {how}", stderr=stderr)
    return stdout


def _read_bounded(proc: subprocess.Popen, deadline: float) -> tuple[bytes, bytes]:
    """Read both pipes until EOF, or until the program has exited and they are idle (a
    helper it left behind, such as an agent, may keep them open); then reap it.
    Raises TimeoutExpired past ``deadline``, OverflowError when stdout is too large."""
    out, err = bytearray(), bytearray()
    selector = selectors.DefaultSelector()
    for pipe, buf in ((proc.stdout, out), (proc.stderr, err)):
        os.set_blocking(pipe.fileno(), False)
        selector.register(pipe.fileno(), selectors.EVENT_READ, buf)
    try:
        while selector.get_map():
            exited = proc.poll() is not None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if exited:
                    break
                raise subprocess.TimeoutExpired(proc.args, 0)
            events = selector.select(0 if exited else min(remaining, 0.1))
            if not events and exited:
                break
            for key, _ in events:
                try:
                    chunk = os.read(key.fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    selector.unregister(key.fd)
                    continue
                buf = key.data
                buf += chunk
                if buf is out and len(out) > _MAX_OUTPUT_BYTES:
                    raise OverflowError
                if buf is err and len(err) > 2 * _STDERR_KEEP_BYTES:
                    # Keep the tail from a line start: a cut line could hold part of a value
                    # the masker would no longer recognise.
                    del err[:-_STDERR_KEEP_BYTES]
                    newline = err.find(b"\n")
                    del err[: newline + 1 if newline >= 0 else len(err)]
    finally:
        selector.close()
    proc.wait(max(0.0, deadline - time.monotonic()))  # TimeoutExpired past the deadline
    return bytes(out), bytes(err)


# Programs running now, so an interrupt of the waiting thread can stop them.
_live: set[subprocess.Popen] = set()
_live_lock = threading.Lock()


def _kill_live() -> None:
    with _live_lock:
        procs = list(_live)
    for proc in procs:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(_GRACE)
    except subprocess.TimeoutExpired:
        pass


def _first_line(stdout: bytes) -> str:
    if not stdout.strip():
        raise _Missing("printed nothing on its standard output")
    try:
        text = stdout.decode("utf-8")
    except UnicodeDecodeError:
        raise _Missing("its output is not UTF-8 text") from None
    line = text.split("\n", 1)[0]
    return line[:-1] if line.endswith("\r") else line


class _NoDebugRecords(logging.Filter):
    """botocore.parsers logs every response body at DEBUG ("Response body: …"): with
    DEBUG logging on (an application's, a user's sitecustomize) that is the secret."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.DEBUG


def _import_boto3() -> bool:
    """True when boto3 (the optional extra) is missing. Imported only when a reference needs it."""
    try:
        import boto3  # noqa: F401
        import botocore.config  # noqa: F401
    except ImportError:
        return True
    parsers = logging.getLogger("botocore.parsers")
    if not any(isinstance(f, _NoDebugRecords) for f in parsers.filters):
        parsers.addFilter(_NoDebugRecords())
    return False


def _from_aws_sm(ref: SecretRef, lookup: Lookup, timeout: float) -> str:
    import boto3
    import botocore.config
    import botocore.exceptions as bx

    secret_id, _, key = ref.target.partition("#")
    # An ARN names its region; otherwise the usual chain (AWS_REGION, profile).
    parts = secret_id.split(":")
    region = parts[3] if secret_id.startswith("arn:") and len(parts) > 3 and parts[3] else None
    config = botocore.config.Config(
        connect_timeout=timeout, read_timeout=timeout, retries={"total_max_attempts": 1}
    )
    try:
        # A session per call: boto3's default session is not thread-safe. The client
        # honours AWS_ENDPOINT_URL and the usual credential chain by itself.
        session = boto3.session.Session()
        # AWS_REGION is the other SDKs' and the AWS CLI's name; boto3 reads only AWS_DEFAULT_REGION.
        region = region or session.region_name or os.environ.get("AWS_REGION") or None
        client = session.client("secretsmanager", region_name=region, config=config)
        response = client.get_secret_value(SecretId=secret_id)
    except bx.NoRegionError:
        raise _Missing("no AWS region", hint="set AWS_REGION or AWS_DEFAULT_REGION, or give the secret's ARN") from None
    except (bx.NoCredentialsError, bx.PartialCredentialsError):
        raise _Missing(
            "no AWS credentials", hint="the usual chain: AWS_PROFILE, AWS_ACCESS_KEY_ID/..., an instance role"
        ) from None
    except (bx.EndpointConnectionError, bx.ConnectTimeoutError, bx.ReadTimeoutError, bx.ConnectionClosedError) as exc:
        raise _Unreachable(f"AWS Secrets Manager not reachable ({type(exc).__name__})") from None
    except bx.ClientError as exc:
        error = exc.response.get("Error", {})
        code = error.get("Code", "error")
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        if code == "ResourceNotFoundException":
            raise _Missing("no such secret in AWS Secrets Manager") from None
        kind = _Unreachable if status >= 500 or code in ("ThrottlingException", "ServiceUnavailable") else _Missing
        raise kind(f"AWS Secrets Manager refused ({code})", foreign=str(error.get("Message", ""))) from None
    except bx.ParamValidationError:
        raise _Missing("not a valid secret id for AWS Secrets Manager") from None
    except bx.BotoCoreError as exc:  # SSO token expired, credential process failed, ...
        raise _Unreachable(f"AWS Secrets Manager not reachable ({type(exc).__name__})") from None
    text = response.get("SecretString")
    if text is None:
        try:
            text = bytes(response.get("SecretBinary") or b"").decode("utf-8")
        except UnicodeDecodeError:
            raise _Missing("the secret is binary, not UTF-8 text") from None
    if not key:
        return text
    try:
        document = json.loads(text)
    except ValueError:
        raise _Missing(f"the secret is not JSON, so it has no key '{key}'") from None
    if not isinstance(document, dict) or key not in document:
        raise _Missing(f"the secret has no JSON key '{key}'")
    value = document[key]
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float, bool)):
        return json.dumps(value)
    raise _Missing(f"JSON key '{key}' holds {'an object' if isinstance(value, dict) else 'a list or null'}, not a string")


_FETCH: dict[str, Callable[[SecretRef, Lookup, float], str]] = {
    "env": _from_env,
    "file": _from_file,
    "pass": _from_pass,
    "aws-sm": _from_aws_sm,
    "cmd": _from_cmd,
}
