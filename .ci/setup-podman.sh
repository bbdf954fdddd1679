#!/usr/bin/env bash
# Install and start rootful Podman with its Docker-compatible API on
# /run/podman/podman.sock, and give it the local test images Docker has
# (primus-test/*: no registry is reachable here).
#
# Idempotent and cheap when everything is already there. Needs root and a
# running Docker daemon with the test images (bash .ci/setup-engines.sh first).
# Debian 12 (bookworm): Podman 4.3.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export DEBIAN_FRONTEND=noninteractive

SOCK=/run/podman/podman.sock
LOG=/var/log/podman-service.log
CONF=/etc/containers/containers.conf
IMAGES=(primus-test/busybox:latest primus-test/python:bookworm primus-test/noshell:latest)

log() { printf '[setup-podman %4ds] %s\n' "$SECONDS" "$*"; }
die() { printf '[setup-podman] ERROR: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root"

# ---------------------------------------------------------------- packages
# catatonit: Podman's --init (without it every create fails: container-init
# binary not found); uidmap + fuse-overlayfs + slirp4netns: rootless Podman.
declare -A NEED=(
    [podman]=/usr/bin/podman
    [catatonit]=/usr/bin/catatonit
    [uidmap]=/usr/bin/newuidmap
    [fuse-overlayfs]=/usr/bin/fuse-overlayfs
    [slirp4netns]=/usr/bin/slirp4netns
)
missing=()
for pkg in "${!NEED[@]}"; do
    [ -x "${NEED[$pkg]}" ] || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
    log "installing: ${missing[*]}"
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/var/log/primus-setup-podman-apt.log 2>&1 \
        || { tail -n 30 /var/log/primus-setup-podman-apt.log >&2; die "apt-get install failed"; }
else
    log "packages: present"
fi

# ---------------------------------------------------------------- configuration
# These sandboxes run a hybrid cgroup layout (crun refuses it: runc), have no
# systemd (cgroupfs) and refuse raising RLIMIT_NOFILE (no default ulimits).
desired_conf='# Written by .ci/setup-podman.sh (sandboxed test machines).
[containers]
default_ulimits = []
log_driver = "k8s-file"

[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
events_logger = "file"
'
if [ "$(cat "$CONF" 2>/dev/null)" != "$(printf '%s' "$desired_conf")" ]; then
    log "writing $CONF"
    mkdir -p "$(dirname "$CONF")"
    printf '%s' "$desired_conf" >"$CONF"
    restart=1
else
    restart=0
fi

# ---------------------------------------------------------------- API service
ping() { curl -fsS --max-time 3 --unix-socket "$SOCK" http://d/_ping >/dev/null 2>&1; }
service_pids() { pgrep -f "^podman system service --time=0 unix://$SOCK\$" || true; }
if [ "$restart" = 1 ] && [ -n "$(service_pids)" ]; then
    log "podman service: restarting for the new configuration"
    for pid in $(service_pids); do kill "$pid" 2>/dev/null || true; done
    sleep 1
fi
if ping; then
    log "podman service: running on $SOCK"
else
    log "podman service: starting on $SOCK"
    mkdir -p "$(dirname "$SOCK")"
    rm -f "$SOCK"
    setsid podman system service --time=0 "unix://$SOCK" >"$LOG" 2>&1 </dev/null &
    pid=$!
    for _ in $(seq 60); do
        ping && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.5
    done
    ping || { tail -n 30 "$LOG" >&2; die "podman system service did not answer on $SOCK (log: $LOG)"; }
    log "podman service: up"
fi

# ---------------------------------------------------------------- images
# `docker save | podman load` names an image localhost/NAME; a second tag under
# the bare name keeps `podman images` output and inspect's RepoTags familiar.
# The compat API resolves the bare name either way.
for image in "${IMAGES[@]}"; do
    if podman image exists "$image"; then
        log "image $image: present"
        continue
    fi
    docker image inspect "$image" >/dev/null 2>&1 || die "docker has no $image (run bash .ci/setup-engines.sh first)"
    log "image $image: docker save | podman load"
    docker save "$image" | podman load -q >/dev/null || die "podman load of $image failed"
    podman image exists "$image" || die "$image does not resolve in podman after load"
done

# ---------------------------------------------------------------- smoke test
podman run --rm --init "${IMAGES[0]}" true || die "podman run --rm ${IMAGES[0]} true failed (see $CONF)"
log "podman: ready ($(podman version -f '{{.Server.Version}}' 2>/dev/null || podman --version))"

# ---------------------------------------------------------------- rootless
# An unprivileged user for the rootless test (tests/integration/podman/test_podman.py): its
# own image store with busybox, a fixed private runtime dir (Podman refuses a store
# whose run root moved), and a Python the user can run (/root's pyenv is 0700) with
# the runner's dependencies; the tests run the tree's code with PYTHONPATH.
RL_USER=primus-rootless
RL_RUNTIME=/run/primus-rootless
RL_VENV=/opt/primus-rootless-venv
RL_TAR=/var/tmp/primus-rootless-busybox.tar
id "$RL_USER" >/dev/null 2>&1 || { log "rootless: adding user $RL_USER"; useradd -m -s /bin/sh "$RL_USER"; }
grep -q "^$RL_USER:" /etc/subuid || usermod --add-subuids 200000-265535 --add-subgids 200000-265535 "$RL_USER"
install -d -o "$RL_USER" -g "$RL_USER" -m 0700 "$RL_RUNTIME"
as_user() { runuser -u "$RL_USER" -- env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="/home/$RL_USER" XDG_RUNTIME_DIR="$RL_RUNTIME" "$@"; }
if as_user podman image exists "${IMAGES[0]}" 2>/dev/null; then
    log "rootless: image ${IMAGES[0]} present for $RL_USER"
else
    log "rootless: loading ${IMAGES[0]} as $RL_USER"
    docker save "${IMAGES[0]}" -o "$RL_TAR"
    chmod 0644 "$RL_TAR"
    as_user podman load -q -i "$RL_TAR" >/dev/null 2>&1 || die "rootless podman load failed (as $RL_USER)"
    rm -f "$RL_TAR"
fi
deps=$(/usr/bin/python3 -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))')
if [ -x "$RL_VENV/bin/python" ] && [ "$(cat "$RL_VENV/.deps" 2>/dev/null)" = "$deps" ]; then
    log "rootless: $RL_VENV present"
else
    log "rootless: $RL_VENV (the runner's dependencies for $RL_USER)"
    rm -rf "$RL_VENV"
    /usr/bin/python3 -m venv "$RL_VENV"
    printf '%s\n' "$deps" >"$RL_VENV/requirements.txt"
    "$RL_VENV/bin/pip" install --no-input -q --progress-bar off -r "$RL_VENV/requirements.txt" \
        || die "pip install of the runner's dependencies into $RL_VENV failed"
    printf '%s' "$deps" >"$RL_VENV/.deps"
    chmod -R a+rX "$RL_VENV"
fi
log "rootless: ready ($RL_USER, XDG_RUNTIME_DIR=$RL_RUNTIME)"
