"""What a build is, as data: the ``BuildSpec`` a recipe resolves to, its result, and the
names every part of image building shares (the CA bundle's name in the context, labels)."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from runner import LABEL_VERSION

FLAVORS = ("rocm", "cuda")
DEFAULT_BASES = {"rocm": "rocm/primus:v26.5", "cuda": "nvcr.io/nvidia/pytorch:25.01-py3"}
DEFAULT_TAG = "primus-runner/{flavor}:{version}"
USER_TAG = "primus-runner/{name}:dev"  # a user's Dockerfile without --tag
CA_NAME = "common/ca-bundle.crt"  # fixed name the Dockerfiles COPY; public data, never a secret
# A user's Dockerfile outside its context travels in the context tar under this name (as docker does).
STAGED_DOCKERFILE = ".primus-runner.Dockerfile"
SYSTEM_CA = "/etc/ssl/certs/ca-certificates.crt"
# pip settings that make sense inside a build container (host paths do not).
PIP_KEYS = {"index-url": "PIP_INDEX_URL", "extra-index-url": "PIP_EXTRA_INDEX_URL", "trusted-host": "PIP_TRUSTED_HOST", "default-timeout": "PIP_DEFAULT_TIMEOUT", "timeout": "PIP_DEFAULT_TIMEOUT"}
# Docker's predefined proxy args: honoured by RUN steps, left out of the history.
PROXY_ARGS = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "FTP_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "ftp_proxy", "all_proxy")
SECRET_FIX = "use --secret NAME and RUN --mount=type=secret,id=NAME in the Dockerfile (the value reaches that one step, never a layer), or pass it to the job at run time"

L_SOURCE = "org.opencontainers.image.source"
L_REVISION = "org.opencontainers.image.revision"
L_CREATED = "org.opencontainers.image.created"
L_BASE = "org.opencontainers.image.base.name"
L_FLAVOR = "io.primus-runner.flavor"
L_VERSION = LABEL_VERSION
L_RECIPE = "io.primus-runner.recipe-hash"
L_BUILD_KEY = "io.primus-runner.build-key"


class BuildSpec(NamedTuple):
    """Everything a build will do, decided before the daemon is contacted. Holds secret NAMES only."""

    flavor: str | None  # None for a user's own Dockerfile
    context_dir: str
    dockerfile: str  # relative to context_dir (STAGED_DOCKERFILE when it lives outside)
    base: str | None
    tag: str
    build_args: tuple[tuple[str, str], ...]
    labels: tuple[tuple[str, str], ...]  # without .created (set when the build runs)
    files: tuple[str, ...]  # context members, relative, after .dockerignore
    ca_source: str | None
    recipe_hash: str
    no_cache: bool = False
    notes: tuple[str, ...] = ()
    secrets: tuple[str, ...] = ()  # names for RUN --mount=type=secret,id=NAME
    dockerfile_source: str | None = None  # absolute path of a Dockerfile outside the context
    stage_ca: bool = True  # the project's recipes COPY common/ca-bundle.crt; users' contexts are left as they are

    @property
    def user_dockerfile(self) -> bool:
        return self.flavor is None

    def dockerfile_path(self) -> Path:
        return Path(self.dockerfile_source) if self.dockerfile_source else Path(self.context_dir) / self.dockerfile

    def to_dict(self) -> dict:
        return {
            "flavor": self.flavor,
            "context": self.context_dir,
            "dockerfile": str(self.dockerfile_path()) if self.dockerfile_source else self.dockerfile,
            "base": self.base,
            "tag": self.tag,
            "build_args": dict(self.build_args),
            "secrets": list(self.secrets),
            "labels": {**dict(self.labels), L_CREATED: "(set when built)"},
            "ca_bundle": {"source": self.ca_source, "staged_as": CA_NAME} if self.stage_ca else None,
            "files": list(self.files),
            "no_cache": self.no_cache,
            "notes": list(self.notes),
        }


class BuildResult(NamedTuple):
    image_id: str
    tag: str
    flavor: str | None
    labels: dict[str, str]
    builder: str = "classic"
    steps: int = 0
    cache_hits: int = 0
    ran: int = 0
    seconds: float = 0.0
    log: tuple[str, ...] | list[str] = ()  # the builder's output, masked

    def to_dict(self) -> dict:
        return {"image_id": self.image_id, "tag": self.tag, "flavor": self.flavor, "labels": self.labels, "builder": self.builder,
                "cache_hits": self.cache_hits, "steps": self.steps, "ran": self.ran}
