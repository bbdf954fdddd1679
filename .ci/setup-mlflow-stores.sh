#!/usr/bin/env bash
# What tests/integration/trackers/test_mlflow_stores.py needs beside the MLflow server of
# setup-engines.sh: the runner's `mlflow` extra (mlflow-skinny + boto3) in the
# project's Python, and moto's S3 server (moto_server) as an S3 endpoint on
# loopback. The tests start their own servers (moto, two more MLflow servers
# with a local and an S3 --default-artifact-root) from session fixtures.
#
# Idempotent and cheap when done: each step checks before it acts. Root, no stdin.
set -euo pipefail

PYTHON=${PYTHON:-python3}
MLFLOW_VENV=/opt/primus-mlflow

log() { printf '[setup-mlflow-stores %4ds] %s\n' "$SECONDS" "$*"; }
die() { printf '[setup-mlflow-stores] ERROR: %s\n' "$*" >&2; exit 1; }

have() { "$PYTHON" -c "import importlib.util, sys; sys.exit(0 if all(importlib.util.find_spec(m) for m in sys.argv[1:]) else 1)" "$@"; }

[ -x "$MLFLOW_VENV/bin/mlflow" ] || die "$MLFLOW_VENV/bin/mlflow is missing: run bash .ci/setup-engines.sh first"

if have mlflow boto3 moto && command -v moto_server >/dev/null 2>&1 && have flask werkzeug; then
    log "mlflow-skinny, boto3, moto[server]: present"
else
    log "installing mlflow-skinny, boto3, moto[server] into $("$PYTHON" -c 'import sys; print(sys.executable)')"
    "$PYTHON" -m pip install -q --disable-pip-version-check "mlflow-skinny>=2.10" "boto3>=1.28" "moto[server]>=5" \
        >/var/log/primus-setup-mlflow-stores.log 2>&1 \
        || { tail -n 30 /var/log/primus-setup-mlflow-stores.log >&2; die "pip install failed"; }
    have mlflow boto3 moto || die "the packages do not import after install"
    command -v moto_server >/dev/null 2>&1 || { command -v pyenv >/dev/null 2>&1 && pyenv rehash; }
    command -v moto_server >/dev/null 2>&1 || die "moto_server is not on PATH"
fi
log "done"
