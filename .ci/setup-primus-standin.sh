#!/usr/bin/env bash
# The stand-in Primus image for the launcher-mode tests: primus-test/primus-standin:latest
# (busybox + a primus-cli that prints its arguments and environment, and bash as busybox sh).
# Also a second user (primus-second, in the docker group) with a venv, for the owner-scope tests.
# Idempotent and cheap when done: rebuilt only when its recipe changed. Needs the Docker
# daemon and primus-test/busybox:latest (.ci/setup-engines.sh).
set -euo pipefail
IMAGE=primus-test/primus-standin:latest
HERE=$(cd "$(dirname "$0")/.." && pwd)
CONTEXT=$HERE/tests/fixtures/primus-standin
die() { printf '[setup-primus-standin] ERROR: %s\n' "$*" >&2; exit 1; }

docker info >/dev/null 2>&1 || die "the Docker daemon is not answering; run .ci/setup-engines.sh first"
docker image inspect primus-test/busybox:latest >/dev/null 2>&1 || die "primus-test/busybox:latest is missing; run .ci/setup-engines.sh first"
sum=$(cat "$CONTEXT/Dockerfile" "$CONTEXT/standin.sh" | sha256sum | cut -c1-16)
have=$(docker image inspect -f '{{index .Config.Labels "io.primus-test.recipe"}}' "$IMAGE" 2>/dev/null || true)
if [ "$have" != "$sum" ]; then
    DOCKER_BUILDKIT=0 docker build -q --label "io.primus-test.recipe=$sum" -t "$IMAGE" -f "$CONTEXT/Dockerfile" "$CONTEXT" >/dev/null 2>&1 \
        || die "docker build of $IMAGE failed"
    echo "[setup-primus-standin] built $IMAGE"
fi

# A second user with Docker access, for the owner-scope tests (one user's `down --all` and
# `--clean` must not touch another user's runner containers). It runs the tree's code with
# PYTHONPATH through a venv of its own (/root's pyenv is 0700).
OTHER_USER=primus-second
OTHER_VENV=/opt/primus-second-venv
[ "$(id -u)" = 0 ] || die "must run as root (for the second user)"
id "$OTHER_USER" >/dev/null 2>&1 || useradd -m -s /bin/sh "$OTHER_USER"
id -nG "$OTHER_USER" | tr ' ' '\n' | grep -qx docker || usermod -aG docker "$OTHER_USER"
deps=$(cd "$HERE" && /usr/bin/python3 -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))')
if [ ! -x "$OTHER_VENV/bin/python" ] || [ "$(cat "$OTHER_VENV/.deps" 2>/dev/null)" != "$deps" ]; then
    rm -rf "$OTHER_VENV"
    /usr/bin/python3 -m venv "$OTHER_VENV"
    printf '%s\n' "$deps" >"$OTHER_VENV/requirements.txt"
    "$OTHER_VENV/bin/pip" install --no-input -q --progress-bar off -r "$OTHER_VENV/requirements.txt" \
        || die "pip install of the runner's dependencies into $OTHER_VENV failed"
    printf '%s' "$deps" >"$OTHER_VENV/.deps"
    chmod -R a+rX "$OTHER_VENV"
    echo "[setup-primus-standin] $OTHER_VENV ready for $OTHER_USER"
fi
