#!/usr/bin/env bash
# A password-protected image registry on loopback for the pull and credential
# tests: Debian's docker-registry (the CNCF distribution registry) with htpasswd
# auth on 127.0.0.1:$PORT, holding
#   127.0.0.1:$PORT/primus-test/busybox:latest  (the local busybox test image)
#   127.0.0.1:$PORT/primus-test/big:latest      (>= 200 MB in three layers)
# The test user and password are written to $CRED_FILE (root only) for the tests.
#
# Idempotent and cheap when done: each step checks before it acts. Needs root,
# a running Docker daemon and primus-test/busybox:latest (.ci/setup-engines.sh).
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive

PORT=${PRIMUS_TEST_REGISTRY_PORT:-5599}
ADDR=127.0.0.1:$PORT
DIR=/var/lib/primus-test-registry
CRED_DIR=/etc/primus-test-registry
CRED_FILE=$CRED_DIR/credentials
BUSYBOX_IMAGE=primus-test/busybox:latest
BIG_MB=110   # each of the two random-data layers; uncompressible, so the pull moves them all

log() { printf '[setup-registry %4ds] %s\n' "$SECONDS" "$*"; }
die() { printf '[setup-registry] ERROR: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root"
docker info >/dev/null 2>&1 || die "the Docker daemon is not answering; run .ci/setup-engines.sh first"
docker image inspect "$BUSYBOX_IMAGE" >/dev/null 2>&1 || die "$BUSYBOX_IMAGE is missing; run .ci/setup-engines.sh first"

# ---------------------------------------------------------------- packages
if [ ! -x /usr/bin/docker-registry ] || [ ! -x /usr/bin/htpasswd ]; then
    log "installing docker-registry apache2-utils"
    # Other setup scripts may be installing at the same time: wait for dpkg's lock.
    apt-get -o DPkg::Lock::Timeout=600 update -qq
    # Keep the package's init script from starting a registry with its own config.
    policy=/usr/sbin/policy-rc.d
    had_policy=0; [ -e "$policy" ] && had_policy=1
    [ "$had_policy" = 1 ] || { printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod 755 "$policy"; }
    apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends docker-registry apache2-utils >/var/log/primus-setup-registry-apt.log 2>&1 \
        || { [ "$had_policy" = 1 ] || rm -f "$policy"; tail -n 30 /var/log/primus-setup-registry-apt.log >&2; die "apt-get install failed"; }
    [ "$had_policy" = 1 ] || rm -f "$policy"
else
    log "packages: present"
fi

# ---------------------------------------------------------------- credentials
umask 077
mkdir -p "$CRED_DIR" "$DIR/storage"
chmod 700 "$CRED_DIR"
if [ ! -s "$CRED_FILE" ] || [ ! -s "$DIR/htpasswd" ]; then
    user=primus-test
    password="reg-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
    printf 'user=%s\npassword=%s\nregistry=%s\n' "$user" "$password" "$ADDR" >"$CRED_FILE"
    chmod 600 "$CRED_FILE"
    # -i: the password on stdin, not on htpasswd's command line.
    printf '%s\n' "$password" | htpasswd -iBn "$user" >"$DIR/htpasswd"
    fresh_password=1
    log "credentials: new ($CRED_FILE)"
else
    fresh_password=0
fi
user=$(sed -n 's/^user=//p' "$CRED_FILE")
password=$(sed -n 's/^password=//p' "$CRED_FILE")

cat >"$DIR/config.yml.new" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $DIR/storage
  delete:
    enabled: true
http:
  addr: $ADDR
auth:
  htpasswd:
    realm: primus-test-registry
    path: $DIR/htpasswd
EOF
mv "$DIR/config.yml.new" "$DIR/config.yml"

# Podman (containers/image) wants HTTPS unless told otherwise; Docker treats
# loopback registries as insecure by itself. A Podman API service reads this
# when it starts: run this script before .ci/setup-podman.sh starts it.
(umask 022; mkdir -p /etc/containers/registries.conf.d)
dropin=/etc/containers/registries.conf.d/primus-test-registry.conf
want=$(printf '# The loopback test registry of .ci/setup-registry.sh speaks plain HTTP.\n[[registry]]\nlocation = "%s"\ninsecure = true\n' "$ADDR")
if [ "$(cat "$dropin" 2>/dev/null)" != "$want" ]; then
    printf '%s\n' "$want" >"$dropin"
    chmod 644 "$dropin"
    log "podman: $ADDR marked insecure in $dropin"
fi

# ---------------------------------------------------------------- serve
v2_status() { curl -s -o /dev/null -w '%{http_code}' --max-time 3 "http://$ADDR/v2/" 2>/dev/null || true; }
registry_pid() { pgrep -f "^/usr/bin/docker-registry serve $DIR/config.yml" | head -n1 || true; }

if [ "$fresh_password" = 1 ] && [ -n "$(registry_pid)" ]; then
    # The htpasswd file changed under a running registry: restart ours only.
    kill "$(registry_pid)" || true
    sleep 1
fi
if [ "$(v2_status)" != 401 ]; then
    [ -z "$(registry_pid)" ] || die "a registry is running but /v2/ at $ADDR does not answer 401"
    if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
        die "port $PORT is taken by something else; set PRIMUS_TEST_REGISTRY_PORT"
    fi
    log "starting docker-registry on $ADDR"
    setsid /usr/bin/docker-registry serve "$DIR/config.yml" </dev/null >>/var/log/primus-test-registry.log 2>&1 &
    for _ in $(seq 1 60); do
        [ "$(v2_status)" = 401 ] && break
        sleep 0.5
    done
fi
[ "$(v2_status)" = 401 ] || { tail -n 20 /var/log/primus-test-registry.log >&2 || true; die "/v2/ at $ADDR does not answer 401"; }
log "registry: $ADDR answers 401 without credentials"

# ---------------------------------------------------------------- images
has_tag() {  # repo tag
    local code
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -K - \
        -H 'Accept: application/vnd.docker.distribution.manifest.v2+json' \
        "http://$ADDR/v2/$1/manifests/$2" <<<"user = \"$user:$password\"" || true)
    [ "$code" = 200 ]
}

need_busybox=1; has_tag primus-test/busybox latest && need_busybox=0
need_big=1; has_tag primus-test/big latest && need_big=0
if [ "$need_busybox" = 0 ] && [ "$need_big" = 0 ]; then
    log "images: present in the registry"
    exit 0
fi

# docker login writes to a throw-away config, never root's own ~/.docker.
DOCKER_CONFIG=$(mktemp -d)
export DOCKER_CONFIG
work=$(mktemp -d)
cleanup() {
    docker logout "$ADDR" >/dev/null 2>&1 || true
    rm -rf "$DOCKER_CONFIG" "$work"
    docker image rm "$ADDR/primus-test/busybox:latest" "$ADDR/primus-test/big:latest" >/dev/null 2>&1 || true
}
trap cleanup EXIT
printf '%s' "$password" | docker login "$ADDR" -u "$user" --password-stdin >/dev/null

if [ "$need_busybox" = 1 ]; then
    log "pushing $ADDR/primus-test/busybox:latest"
    docker tag "$BUSYBOX_IMAGE" "$ADDR/primus-test/busybox:latest"
    docker push -q "$ADDR/primus-test/busybox:latest" >/dev/null
fi
if [ "$need_big" = 1 ]; then
    log "building $ADDR/primus-test/big:latest (2 x $BIG_MB MB random layers on busybox)"
    cat >"$work/Dockerfile" <<EOF
FROM $BUSYBOX_IMAGE
RUN dd if=/dev/urandom of=/layer1.bin bs=1M count=$BIG_MB 2>/dev/null
RUN dd if=/dev/urandom of=/layer2.bin bs=1M count=$BIG_MB 2>/dev/null
EOF
    # The classic builder: a newer CLI on PATH would otherwise want buildx.
    DOCKER_BUILDKIT=0 docker build -q -t "$ADDR/primus-test/big:latest" "$work" >/dev/null
    log "pushing $ADDR/primus-test/big:latest"
    docker push -q "$ADDR/primus-test/big:latest" >/dev/null
fi
has_tag primus-test/busybox latest || die "primus-test/busybox:latest is not in the registry after the push"
has_tag primus-test/big latest || die "primus-test/big:latest is not in the registry after the push"
log "images: pushed"
