"""``primus-runner demo``: the product end to end on a fresh machine, in one command.

Makes a tiny local image from the host's static busybox (no registry), then
launches a job through the same path as ``up`` that prints what it received:
forwarded names, tracker settings, and a secret the runner masks. With no
Docker or Podman answering (a fresh laptop, no root), the same job runs on the
process engine, and the runner says so and how to get containers.
"""

from __future__ import annotations

import io
import os
import secrets
import tarfile

from runner.errors import EngineUnavailable
from runner.options import Sources
from runner.resources import policies_dir
from runner.ui import Output

IMAGE = "primus-runner/demo:latest"
APPLETS = ("sh", "env", "echo", "printf", "cat", "sleep", "sort", "grep", "base64", "true", "false", "id", "hostname")
BUSYBOX_CANDIDATES = ("/bin/busybox", "/usr/bin/busybox")

JOB = r"""
echo "== inside the job =="
echo "greeting (a literal from the config): $DEMO_GREETING"
echo "W&B settings (from the trackers: section), as the client reads them:"
env | grep '^WANDB_' | sort | sed 's/^/  /'
echo "the secret, as the job sees it: $DEMO_API_KEY"
echo "  ... and base64-encoded: $(printf %s "$DEMO_API_KEY" | base64)"
if [ -z "${DEMO_NOT_SET+x}" ]; then echo "DEMO_NOT_SET: absent (it was unset on the host)"; fi
echo "== job done =="
"""


def _static_busybox() -> str:
    for path in BUSYBOX_CANDIDATES:
        if os.path.exists(path):
            with open(path, "rb") as fh:
                head = fh.read(1 << 16)
            if b"ld-linux" not in head:  # statically linked: no interpreter named
                return path
    raise EngineUnavailable(
        "the demo image is made from a static busybox, and none was found",
        hint="apt-get install busybox-static (bash .ci/setup-engines.sh does it)",
    )


def ensure_demo_image(out: Output) -> None:
    import json

    from runner.clients.engine_api.shared import engine_client

    eng = engine_client()
    if eng.inspect_image(IMAGE) is not None:
        return
    busybox = _static_busybox()
    out.info(f"making the demo image {IMAGE} from {busybox} (once)")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(busybox, arcname="bin/busybox")
        for applet in APPLETS:
            link = tarfile.TarInfo(f"bin/{applet}")
            link.type, link.linkname = tarfile.SYMTYPE, "busybox"
            tar.addfile(link)
        for directory in ("tmp", "etc"):
            info = tarfile.TarInfo(directory)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777
            tar.addfile(info)
    repository, tag = IMAGE.split(":")
    params = {"fromSrc": "-", "repo": repository, "tag": tag, "changes": 'CMD ["/bin/sh"]'}
    for piece in eng.stream("/images/create", params, method="POST", body=buffer.getvalue(), headers={"Content-Type": "application/x-tar"}):
        for line in piece.splitlines():
            if line.strip() and "error" in (message := json.loads(line)):
                raise EngineUnavailable(f"could not import the demo image: {message['error']}")


NO_CONTAINERS = ("no container engine answers here ({reason}); the demo runs the same job on the process engine "
                 "instead (a child process on this host, the same env policy and masking). For containers, no root "
                 "needed: rootless Podman (sudo apt-get install podman, then `systemctl --user start podman.socket`) "
                 "or rootless Docker (dockerd-rootless-setuptool.sh install); with root: apt-get install docker.io")


def _container_engine(out: Output):
    """The Docker backend with the demo image ready, or None (with the reason said) to run without containers."""
    from runner.engines.docker import DockerEngine
    from runner.clients.engine_api.shared import engine_client

    try:
        engine_client().ping()
        ensure_demo_image(out)
    except EngineUnavailable as exc:
        out.notice(NO_CONTAINERS.format(reason=exc.message))
        return None
    return DockerEngine()


def cmd_demo(sources: Sources, out: Output) -> int:
    import yaml

    from runner.engines.process import ProcessEngine

    backend = _container_engine(out) or ProcessEngine()
    if not os.environ.get("DEMO_API_KEY"):
        # A throwaway secret for this run only: it lives in this process's memory.
        os.environ["DEMO_API_KEY"] = f"demo-secret-{secrets.token_hex(8)}"
    os.environ.setdefault("WANDB_MODE", "offline")
    os.environ.pop("DEMO_NOT_SET", None)
    with open(policies_dir() / "demo.yaml", encoding="utf-8") as fh:
        layer = yaml.safe_load(fh)
    where = "a local container" if backend.name != "process" else "a process on this host"
    out.info(f"primus-runner demo: {where}, no registry, no GPU. Secret values print as ***.")
    from runner.session import pipeline
    from runner.options import RunOptions

    # The same path as `up`; the project's config files are left out: the demo is self-contained.
    demo = RunOptions(command=("/bin/sh", "-c", JOB), sources=Sources(None, sources.env_file, sources.trust_project))
    return pipeline.run(demo, backend, out, layer=layer, user_files=False)


__all__ = ["cmd_demo", "ensure_demo_image", "IMAGE"]
