#!/usr/bin/env bash
# Install the secret stores the secret-reference tests use (tests/*/test_secret_refs*.py):
#   pass + gnupg (Debian), and moto's AWS Secrets Manager server + boto3 (PyPI,
#   into the interpreter that runs the tests: $PYTHON, default python3).
# Nothing is started here: each test starts its own throw-away gpg key, password
# store and moto_server on a free loopback port.
#
# Idempotent and cheap when already done (checks before it acts). Root, no stdin.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
PYTHON=${PYTHON:-python3}

log() { printf '[setup-secret-stores %4ds] %s\n' "$SECONDS" "$*"; }
die() { printf '[setup-secret-stores] ERROR: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root"

# ---------------------------------------------------------------- pass, gnupg
missing=()
[ -x /usr/bin/pass ] || missing+=(pass)
[ -x /usr/bin/gpg ] || missing+=(gnupg)
[ -x /usr/bin/gpg-agent ] || missing+=(gpg-agent)
if [ "${#missing[@]}" -gt 0 ]; then
    log "installing: ${missing[*]}"
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } \
        >/var/log/primus-setup-secret-stores-apt.log 2>&1 \
        || { tail -n 30 /var/log/primus-setup-secret-stores-apt.log >&2; die "apt-get install ${missing[*]} failed"; }
else
    log "pass, gnupg: present"
fi

# ---------------------------------------------------------------- moto, boto3
# moto_server must be on the PATH of the interpreter's environment (the test fixture
# looks for it next to $PYTHON first, then on PATH).
if "$PYTHON" -c 'import boto3, moto.server, flask, flask_cors' >/dev/null 2>&1; then
    log "boto3, moto[server]: present"
else
    log "installing boto3, moto[server] into $("$PYTHON" -c 'import sys; print(sys.prefix)')"
    "$PYTHON" -m pip install --no-input -q 'boto3>=1.28' 'moto[server]>=5' \
        >/var/log/primus-setup-secret-stores-pip.log 2>&1 \
        || { tail -n 30 /var/log/primus-setup-secret-stores-pip.log >&2; die "pip install boto3 moto[server] failed"; }
fi

# ---------------------------------------------------------------- verify
command -v pass >/dev/null || die "pass is not on PATH after install"
command -v gpg >/dev/null || die "gpg is not on PATH after install"
"$PYTHON" -c 'import boto3, moto.server' || die "boto3/moto are not importable by $PYTHON"
log "ok"
