"""``primus-runner trust [--show] [--revoke]``: the user's say-so for a directory's own files.

The project files are the ones the next command here would read: the project's
``.primus.yaml`` (here or up to the repository root), ``./.env`` (unless
``--env-file`` names another) and a Primus checkout's ``runner/.primus.yaml``.
``trust`` records each by path and content hash (``runner.config.trust``);
``--show`` lists them with their state and what trusting them would allow.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from runner.options import Sources
from runner.ui import Output


@dataclass(frozen=True)
class ProjectFile:
    path: Path
    kind: str  # checkout | project | env-file
    digest: str
    status: str  # trusted | changed | untrusted
    asks: tuple[str, ...]  # what only trust allows (each refusal's key and reason), never a value


def project_files(sources: Sources) -> list[ProjectFile]:
    """The project files a command run here would read, each read once (size-limited)."""
    from runner.config import trust
    from runner.config.layers import layer_files, refuse_if_not_yours
    from runner.config.envfile import DEFAULT_NAME
    from runner.config.yamlsource import parse_yaml, read_text

    found: list[ProjectFile] = []
    for layer in layer_files(sources.config_file):
        if not layer.project:
            continue
        text = read_text(layer.path, "config file")
        digest = trust.digest(text.encode("utf-8", "surrogateescape"))
        located = parse_yaml(text, str(layer.path))
        asks = trust.untrusted_asks(located.data, layer.path, located.where)
        found.append(ProjectFile(layer.path, layer.kind, digest, trust.status(layer.path, digest), _described(asks)))
    env_path = Path.cwd() / DEFAULT_NAME
    if sources.env_file is None and env_path.is_file():
        refuse_if_not_yours(env_path, "the env file")
        text = read_text(env_path, "env file")
        digest = trust.digest(text.encode("utf-8", "surrogateescape"))
        names = {}
        for number, line in enumerate(text.splitlines(), 1):
            name = line.strip().removeprefix("export ").partition("=")[0].strip()
            if name and not name.startswith("#"):
                names.setdefault(name, number)
        asks = trust.env_file_asks(names, names, env_path)
        found.append(ProjectFile(env_path, "env-file", digest, trust.status(env_path, digest), _described(asks)))
    return found


def _described(asks) -> tuple[str, ...]:
    return tuple(f"{ask.key} {ask.what} ({ask.where})" for ask in asks)


def cmd_trust(sources: Sources, out: Output, show: bool = False, revoke: bool = False) -> int:
    from runner.config import trust

    files = project_files(sources)
    if not show and files:
        try:
            store = trust.record([(f.path, f.digest) for f in files], revoke=revoke)
        except OSError as exc:
            from runner.errors import RuntimeFailure

            raise RuntimeFailure(f"cannot write the trust store {trust.store_path()}: {exc.strerror}",
                                 hint="check that the state directory ($XDG_STATE_HOME, default ~/.local/state) is yours and writable")
        state = "untrusted" if revoke else "trusted"
        files = [ProjectFile(f.path, f.kind, f.digest, state, f.asks) for f in files]
    else:
        store = trust.store_path()
    if out.json_mode:
        out.json({"store": str(store), "recorded": bool(files) and not show,
                  "files": [{"path": str(f.path), "kind": f.kind, "sha256": f.digest, "status": f.status, "asks": list(f.asks)}
                            for f in files]})
        return 0
    if not files:
        out.info("no project files here (.primus.yaml up to the repository root, ./.env, a Primus checkout's runner/.primus.yaml): nothing to trust")
        return 0
    for f in files:
        out.result(f"{f.status:<9}  {f.path}  ({f.kind}, sha256 {f.digest[:12]})")
        for ask in f.asks:
            out.result(f"             {'allows' if f.status == 'trusted' else 'needs trust'}: {ask}")
    if show:
        out.info(f"trust is recorded in {store}; run primus-runner trust to trust these files as they are now")
    elif revoke:
        out.info(f"forgotten in {store}")
    else:
        out.info(f"recorded in {store}; any change to a file needs trust again")
    return 0
