"""How secret values reach a container's process without appearing in ``docker inspect``.

The container is started as ``/bin/sh -c SHIM primus-shim <entrypoint> <cmd>``:
the shim reads ``NAME=<octal-escaped value>`` lines from stdin until an empty
line, exports each, closes stdin and ``exec``s the job. The runner writes the
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
SHIM = r"""case $(command -v printf) in printf) ;; *) echo "primus-shim: printf is not a shell builtin in this image; set container.secrets_via: env" >&2; exit 127;; esac
while IFS= read -r l; do
  [ -z "$l" ] && break
  n=${l%%=*}
  case $n in ''|[0-9]*|*[!A-Za-z0-9_]*) echo "primus-shim: bad variable name" >&2; exit 127;; esac
  v=$(printf '%bx' "${l#*=}")
  export "$n=${v%x}"
done
unset l n v
exec </dev/null
exec "$@"
"""


def shim_entrypoint() -> list[str]:
    return ["/bin/sh", "-c", SHIM, SHIM_ARGV0]


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
