"""How secret values reach a container's process without appearing in ``docker inspect``.

The container is started as ``/bin/sh -c SHIM primus-shim <entrypoint> <cmd>``:
the shim reads ``NAME=<octal-escaped value>`` lines from stdin until an empty
line, exports each, closes stdin and ``exec``s the job. With ``-i`` stdin stays
open for the job (``STDIN_SHIM``). With a terminal (``-t``) stdin is the container's
tty, which would echo the payload back to the user's screen: ``TTY_SHIM`` first turns
echo (and line editing) off, then prints ``READY``; the runner writes the payload only
after it has seen ``READY``, and the shim restores the terminal before it ``exec``s. The runner writes the
lines into the attached stdin and closes it. Values are decoded with the
``printf '%b'`` builtin, so any byte survives, no external binary is run (no
value ever lands in a process's command line), and the shim refuses to run if
``printf`` is not a builtin. ``Config.Env``/``Cmd``/``Args``/``Labels`` only
ever hold public values and this fixed script.

This module holds the only ``.reveal()`` of the Docker backend: ``_revealed``.
"""

from __future__ import annotations

from typing import Iterator, Mapping

from runner.secrets import Secret

SHIM_ARGV0 = "primus-shim"

# $0 is primus-shim, "$@" the job's argv. Command substitution strips trailing
# newlines, hence the 'x' sentinel. The name is validated (defence in depth).
_CHECK = r"""case $(command -v printf) in printf) ;; *) echo "primus-runner: printf is not a shell builtin in this image; set container.secrets_via: env" >&2; exit 127;; esac
"""
_READ = r"""while IFS= read -r l; do
  [ -z "$l" ] && break
  n=${l%%=*}
  case $n in ''|[0-9]*|*[!A-Za-z0-9_]*) echo "primus-runner: bad variable name in the secrets" >&2; exit 127;; esac
  v=$(printf '%bx' "${l#*=}")
  export "$n=${v%x}"
done
unset l n v
"""
# The shell's own "not found" names the shim ($0) and a line of it: the user's words instead.
_EXEC = """command -v "$1" >/dev/null 2>&1 || { echo "command not found in the image: $1" >&2; exit 127; }
exec "$@"
"""
SHIM = _CHECK + _READ + "exec </dev/null\n" + _EXEC
STDIN_SHIM = _CHECK + _READ + _EXEC
# An OSC sequence: a terminal shows nothing should it ever reach one. The runner strips it.
READY = b"\x1b]primus-shim-ready\x07"
TTY_SHIM = _CHECK + r"""t=$(stty -g 2>/dev/null) && stty -echo -echonl -icanon min 1 time 0 2>/dev/null || {
  echo "primus-runner: this image has no working stty, which a terminal (-t) with secrets needs to keep them off the screen; drop -t (-i alone works) or add stty (coreutils, busybox)" >&2; exit 127; }
printf '\033]primus-shim-ready\007'
""" + _READ + "stty \"$t\"\nunset t\n" + _EXEC


def shim_entrypoint(interactive: bool = False, tty: bool = False) -> list[str]:
    """The shim for a batch job (stdin closed after the secrets), ``-i`` (stdin stays the
    job's) or ``-t`` (the terminal's echo off while the secrets pass)."""
    return ["/bin/sh", "-c", TTY_SHIM if tty else STDIN_SHIM if interactive else SHIM, SHIM_ARGV0]


def _revealed(secrets: Mapping[str, Secret]) -> Iterator[tuple[str, str]]:
    """THE unwrap of the Docker backend: every secret value leaves the process through here."""
    for name, secret in secrets.items():
        yield name, secret.reveal()


def _escape(value: str) -> str:
    """Every byte as ``\\0ooo``: ``printf %b`` decodes it in dash, bash and busybox alike."""
    return "".join(f"\\0{byte:03o}" for byte in value.encode("utf-8", "surrogateescape"))


def encode_payload(secrets: Mapping[str, Secret]) -> bytes:
    """The bytes the runner writes to the shim's stdin (ends with the empty line)."""
    lines = [f"{name}={_escape(value)}\n" for name, value in _revealed(secrets)]
    return ("".join(lines) + "\n").encode("ascii")


def env_fallback(secrets: Mapping[str, Secret]) -> list[str]:
    """``NAME=value`` entries for ``Config.Env``: used only with ``secrets_via: env``
    or an image without ``/bin/sh``, after a warning naming the risk."""
    return [f"{name}={value}" for name, value in _revealed(secrets)]
