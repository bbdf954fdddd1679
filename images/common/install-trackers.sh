#!/bin/sh
# Installs the pinned tracker clients named in $TRACKERS into the base image's
# python3. Runs in ONE Dockerfile step so the CA and pip settings exist for pip
# only: PIP_CERT points at the CA bundle the runner staged into the context
# (empty when the host has none), PIP_INDEX_URL & co. arrive as build args
# (or, with credentials, as secret mounts).
set -eu
here=$(dirname "$0")
python=${PYTHON:-python3}
command -v "$python" >/dev/null 2>&1 || { echo "primus-runner: the base image has no $python; pick a base with Python (e.g. rocm/primus, nvcr.io/nvidia/pytorch)" >&2; exit 1; }
if [ -s "$here/ca-bundle.crt" ]; then
    export PIP_CERT="$here/ca-bundle.crt"
fi
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore PIP_BREAK_SYSTEM_PACKAGES=1
# pip's cache: the builder's cache mount when there is one (BuildKit), else none
# at all (the classic builder would keep it in the layer).
if grep -qs ' /root/.cache/pip ' /proc/self/mountinfo; then
    export PIP_CACHE_DIR=/root/.cache/pip
else
    export PIP_NO_CACHE_DIR=1
fi
# A private index with credentials arrives as a secret mount (build --secret
# PIP_INDEX_URL): in this process's environment only, for pip, never in a layer.
for name in PIP_INDEX_URL PIP_EXTRA_INDEX_URL; do
    if [ -s "/run/secrets/$name" ]; then
        export "$name=$(cat "/run/secrets/$name")"
    fi
done
pins=""
for name in ${TRACKERS:-}; do
    pin=$(grep -i -E "^${name}(==|\[)" "$here/requirements.txt" || true)
    [ -n "$pin" ] || { echo "primus-runner: TRACKERS names '$name', which has no pin in common/requirements.txt" >&2; exit 1; }
    pins="$pins $pin"
done
if [ -z "$pins" ]; then
    echo "primus-runner: TRACKERS is empty; no tracker client installed"
    exit 0
fi
"$python" -m pip --version >/dev/null 2>&1 || { echo "primus-runner: $python has no pip; pick a base with pip" >&2; exit 1; }
# shellcheck disable=SC2086
"$python" -m pip install $pins
