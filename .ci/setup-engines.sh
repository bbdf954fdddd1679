#!/usr/bin/env bash
# Install and start the real engines the integration tests use:
#   Docker daemon, munge + a two-node Slurm cluster on this machine (n1, n2),
#   local base images (no registry is reachable here), and an MLflow server
#   in its own venv (/opt/primus-mlflow), apart from the project's env.
#
# Idempotent and cheap when everything is already there: each step checks
# before it acts. Needs root. Debian 12 (bookworm).
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive

BUSYBOX_IMAGE=primus-test/busybox:latest
PYTHON_IMAGE=primus-test/python:bookworm
NOSHELL_IMAGE=primus-test/noshell:latest
MLFLOW_VENV=/opt/primus-mlflow
# Pinned: the test fixtures use this release's `mlflow server` flags.
MLFLOW_VERSION=3.17.2
MLFLOW_REQ="mlflow==$MLFLOW_VERSION"
SLURM_CONF=/etc/slurm/slurm.conf
GRES_CONF=/etc/slurm/gres.conf
# The fake GPU host (.ci/setup-fake-gpus.sh): each Slurm node's gres GPUs are 4 of its render nodes.
FAKE_GPU_ROOT=${FAKE_GPU_ROOT:-/var/lib/primus-fake-gpus}
SLURM_PARTITION=debug

log() { printf '[setup-engines %4ds] %s\n' "$SECONDS" "$*"; }
die() { printf '[setup-engines] ERROR: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root"

# ---------------------------------------------------------------- packages
# A command each package provides, to check quickly without dpkg.
declare -A NEED=(
    [docker.io]=/usr/sbin/dockerd
    [slurm-wlm]=/usr/sbin/slurmctld
    [slurm-client]=/usr/bin/srun
    [slurmd]=/usr/sbin/slurmd
    [munge]=/usr/sbin/munged
    [busybox-static]=/bin/busybox
    [debootstrap]=/usr/sbin/debootstrap
    [procps]=/usr/bin/pgrep
    [iptables]=/usr/sbin/iptables
    [zsh]=/usr/bin/zsh                  # completion tests load the zsh and fish scripts
    [fish]=/usr/bin/fish
    [iproute2]=/usr/sbin/ip
)
missing=()
for pkg in "${!NEED[@]}"; do
    [ -x "${NEED[$pkg]}" ] || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
    log "installing: ${missing[*]}"
    apt-get update -qq
    # Keep the packages' own init scripts from starting anything: this script
    # starts the daemons itself, with its own configuration.
    policy=/usr/sbin/policy-rc.d
    had_policy=0; [ -e "$policy" ] && had_policy=1
    [ "$had_policy" = 1 ] || { printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod 755 "$policy"; }
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/var/log/primus-setup-apt.log 2>&1 \
        || { tail -n 30 /var/log/primus-setup-apt.log >&2; die "apt-get install failed"; }
    [ "$had_policy" = 1 ] || rm -f "$policy"
else
    log "packages: present"
fi

# True if $1 is a live (not zombie) process named $2.
live_pid() {
    local pid=$1 comm=$2 stat
    [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$comm" ] || return 1
    stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
    stat=${stat##*) }
    [ "${stat%% *}" != Z ]
}
# pid of a daemon from its pid file, only if that process is alive and is $2.
pid_of() {
    local pidfile=$1 comm=$2 pid
    [ -s "$pidfile" ] || return 1
    pid=$(tr -dc 0-9 <"$pidfile")
    live_pid "$pid" "$comm" || return 1
    echo "$pid"
}
# Remove a pid file left by a daemon that is gone (killed at the end of a
# session, or from before a reboot): daemons refuse to start over one whose
# pid now belongs to another process.
drop_stale_pidfile() {
    [ -e "$1" ] && ! pid_of "$1" "$2" >/dev/null && rm -f "$1"
    return 0
}

# ---------------------------------------------------------------- docker
# A dockerd started with `--bridge none` (e.g. a private test daemon in the
# host's network namespace) deletes docker0: the running daemon then cannot
# start containers on the default network until it is restarted.
if docker info >/dev/null 2>&1 && [ ! -e /sys/class/net/docker0 ] \
    && [ "$(docker network inspect bridge -f '{{index .Options "com.docker.network.bridge.name"}}' 2>/dev/null)" = docker0 ]; then
    log "docker: docker0 bridge is gone, restarting dockerd"
    if pid=$(pid_of /var/run/docker.pid dockerd); then
        kill "$pid"
        for _ in $(seq 30); do live_pid "$pid" dockerd || break; sleep 1; done
        live_pid "$pid" dockerd && kill -9 "$pid"
    fi
fi
if docker info >/dev/null 2>&1; then
    log "docker: running"
else
    log "docker: starting dockerd"
    drop_stale_pidfile /var/run/docker.pid dockerd
    drop_stale_pidfile /var/run/docker/containerd/containerd.pid containerd
    setsid dockerd >/var/log/dockerd.log 2>&1 </dev/null &
    dockerd_pid=$!
    for _ in $(seq 60); do
        docker info >/dev/null 2>&1 && break
        kill -0 "$dockerd_pid" 2>/dev/null || break  # it exited: no use waiting
        sleep 1
    done
    docker info >/dev/null 2>&1 || { tail -n 30 /var/log/dockerd.log >&2; die "dockerd did not answer within 60 s (log: /var/log/dockerd.log)"; }
    log "docker: up"
fi

# ---------------------------------------------------------------- munge
munge_ok() { munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }
if munge_ok; then
    log "munge: running"
else
    log "munge: starting"
    install -d -o munge -g munge -m 0700 /etc/munge
    install -d -o munge -g munge -m 0700 /var/lib/munge /var/log/munge
    install -d -o munge -g munge -m 0755 /run/munge
    key=/etc/munge/munge.key
    if [ ! -s "$key" ] || [ "$(stat -c %s "$key")" != 1024 ]; then
        dd if=/dev/urandom of="$key" bs=1024 count=1 status=none
    fi
    chown munge:munge "$key"
    chmod 0400 "$key"
    drop_stale_pidfile /run/munge/munged.pid munged
    runuser -u munge -- /usr/sbin/munged --force
    for _ in $(seq 20); do munge_ok && break; sleep 0.5; done
    munge_ok || die "munged does not answer (see /var/log/munge/munged.log)"
    log "munge: up"
fi

# ---------------------------------------------------------------- fake GPUs
# Before Slurm: slurmd checks that every gres.conf device file exists.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FAKE_GPU_ROOT=$FAKE_GPU_ROOT bash "$here/setup-fake-gpus.sh" || die "setup-fake-gpus.sh failed"

# ---------------------------------------------------------------- slurm
# NODES=N starts n1..nN on this machine (the 8-node benchmark); the suite uses 2.
SLURM_NODES=${NODES:-2}
[[ "$SLURM_NODES" =~ ^[1-9][0-9]?$ ]] && [ "$SLURM_NODES" -ge 2 ] || die "NODES=$SLURM_NODES: 2 to 99 nodes"
slurm_nodes=$(seq -f 'n%g' 1 "$SLURM_NODES")
host=$(hostname)
desired_conf=$(cat <<EOF
# Written by .ci/setup-engines.sh: a ${SLURM_NODES}-node test cluster on one machine.
ClusterName=primus-test
GresTypes=gpu
SlurmctldHost=${host}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
StateSaveLocation=/var/spool/slurmctld
SlurmctldPidFile=/var/run/slurmctld.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdSpoolDir=/var/spool/slurmd/%n
SlurmdPidFile=/var/run/slurmd-%n.pid
SlurmdLogFile=/var/log/slurm/slurmd-%n.log
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=10
Waittime=0
MinJobAge=3600
NodeName=n[1-${SLURM_NODES}] NodeHostname=${host} NodeAddr=127.0.0.1 Port=17001-$((17000 + SLURM_NODES)) CPUs=1 Gres=gpu:4 State=UNKNOWN
# OverSubscribe: up to 4 jobs share a node's CPU, so test sessions running at
# the same time (a developer's and CI's, or parallel tests) don't queue
# behind one another. DefaultTime: a forgotten job ends after 30 minutes.
PartitionName=${SLURM_PARTITION} Nodes=ALL Default=YES MaxTime=INFINITE DefaultTime=30 OverSubscribe=FORCE:4 State=UP
EOF
)

# Node k's 4 gres GPUs: render nodes 128-131 (odd k) or 132-135 (even k) of the fake host, so a
# node's gres index is not the host's GPU index and two nodes differ.
desired_gres=$(
    echo "# Written by .ci/setup-engines.sh: gres GPUs over the fake GPU host ($FAKE_GPU_ROOT)."
    for n in $slurm_nodes; do
        k=${n#n}; first=$((128 + 4 * ((k - 1) % 2)))
        echo "NodeName=$n Name=gpu File=$FAKE_GPU_ROOT/dev/dri/renderD[$first-$((first + 3))]"
    done
)

stop_pidfile() {
    local pid
    if pid=$(pid_of "$1" "$2"); then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 20); do live_pid "$pid" "$2" || return 0; sleep 0.5; done
        kill -9 "$pid" 2>/dev/null || true
    fi
}

install -d -m 0755 /etc/slurm /var/log/slurm
for n in $slurm_nodes; do install -d -m 0755 "/var/spool/slurmd/$n"; done
install -d -m 0700 /var/spool/slurmctld
current_conf=$(cat "$SLURM_CONF" 2>/dev/null || true)
# A slurm.conf this script did not write (a real cluster's, a login node's) is never replaced.
bash "$(dirname "${BASH_SOURCE[0]}")/slurm-conf-owned.sh" "$SLURM_CONF" || die "not touching $SLURM_CONF"
if [ "$(cat "$GRES_CONF" 2>/dev/null || true)" != "$desired_gres" ]; then
    log "slurm: writing $GRES_CONF"
    printf '%s\n' "$desired_gres" >"$GRES_CONF"
    current_conf="# gres.conf changed: the daemons restart"  # slurmd reads gres.conf only when it starts
fi
if [ "$current_conf" != "$desired_conf" ]; then
    log "slurm: writing $SLURM_CONF"
    printf '%s\n' "$desired_conf" >"$SLURM_CONF"
    node_lines() { grep -E '^(SlurmctldHost|NodeName|Slurmd|SlurmUser|AuthType)' <<<"$1" || true; }
    if [ "$(node_lines "$current_conf")" = "$(node_lines "$desired_conf")" ] \
        && pid_of /var/run/slurmctld.pid slurmctld >/dev/null; then
        # Same nodes: running jobs keep going, the daemons reread the file.
        log "slurm: scontrol reconfigure"
        scontrol reconfigure || die "scontrol reconfigure failed"
    else
        # Restart whatever an earlier run started (every node, also from a larger NODES), so the new nodes are used.
        for f in /var/run/slurmd-n*.pid; do if [ -e "$f" ]; then stop_pidfile "$f" slurmd; fi; done
        stop_pidfile /var/run/slurmctld.pid slurmctld
    fi
fi

for f in /var/run/slurmctld.pid /var/run/slurmd-n*.pid; do
    if [ ! -e "$f" ]; then continue; fi
    drop_stale_pidfile "$f" "$(basename "$f" .pid | sed 's/-n[0-9]*$//')"
done
started=0
if ! pid_of /var/run/slurmctld.pid slurmctld >/dev/null; then
    log "slurm: starting slurmctld"
    slurmctld
    started=1
fi
for n in $slurm_nodes; do
    if ! pid_of "/var/run/slurmd-$n.pid" slurmd >/dev/null; then
        log "slurm: starting slurmd -N $n"
        slurmd -N "$n"
        started=1
    fi
done

nodes_ready() {
    # Every node of the partition is usable: idle, mixed or allocated
    # (no '*' = not responding, no down/drain).
    local states
    states=$(sinfo -h -N -p "$SLURM_PARTITION" -o '%N %t' 2>/dev/null) || return 1
    [ "$(printf '%s\n' "$states" | grep -cE '^n[0-9]+ (idle|mix|alloc)$')" = "$SLURM_NODES" ]
}
resumed=0
for i in $(seq 60); do
    nodes_ready && break
    if [ "$resumed" = 0 ] && [ "$i" -ge 5 ] \
        && sinfo -h -N -p "$SLURM_PARTITION" -o '%t' 2>/dev/null | grep -qE '^(down|drain|drng|fail)'; then
        log "slurm: resuming down/drained nodes"
        scontrol update nodename="n[1-$SLURM_NODES]" state=resume 2>/dev/null || true
        resumed=1
    fi
    sleep 1
done
if ! nodes_ready; then
    sinfo -N -p "$SLURM_PARTITION" >&2 || true
    tail -n 20 /var/log/slurm/slurmctld.log >&2 || true
    die "slurm nodes n1..n$SLURM_NODES are not idle after 60 s"
fi
if [ "$started" = 1 ] || [ "${PRIMUS_SETUP_VERIFY:-0}" = 1 ]; then
    ids=$(timeout 120 srun -N"$SLURM_NODES" -p "$SLURM_PARTITION" -t 2 printenv SLURM_NODEID | sort -n | tr '\n' ' ')
    want=$(seq 0 $((SLURM_NODES - 1)) | tr '\n' ' ')
    [ "$ids" = "$want" ] || die "srun -N$SLURM_NODES printenv SLURM_NODEID gave '$ids', expected '$want'"
    log "slurm: up, srun -N$SLURM_NODES ran on every node"
else
    log "slurm: running"
fi

# ---------------------------------------------------------------- mlflow (start)
# Its own venv, so the full mlflow (server, pandas, sqlalchemy, ...) never
# lands in the project's environment. Installed in the background while the
# images are built; waited for at the end.
mlflow_version() {
    "$MLFLOW_VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("mlflow"))' 2>/dev/null
}
if [ -x "$MLFLOW_VENV/bin/mlflow" ] && [ "$(mlflow_version)" = "$MLFLOW_VERSION" ]; then
    log "mlflow server: present ($MLFLOW_VERSION in $MLFLOW_VENV)"
else
    log "mlflow server: installing $MLFLOW_REQ into $MLFLOW_VENV (in the background)"
    rm -rf "$MLFLOW_VENV"
    ( python3 -m venv "$MLFLOW_VENV" \
        && "$MLFLOW_VENV/bin/pip" install --no-input -q "$MLFLOW_REQ" ) >/var/log/primus-setup-mlflow.log 2>&1 &
    mlflow_pid=$!
fi

# ---------------------------------------------------------------- images
have_image() { docker image inspect "$1" >/dev/null 2>&1; }
workdir=$(mktemp -d /var/tmp/primus-setup.XXXXXX)
trap 'rm -rf "$workdir"' EXIT

if have_image "$BUSYBOX_IMAGE"; then
    log "image $BUSYBOX_IMAGE: present"
else
    log "image $BUSYBOX_IMAGE: building"
    root=$workdir/busybox
    mkdir -p "$root"/{bin,usr/bin,etc,tmp,root,proc,sys,dev}
    chmod 1777 "$root/tmp"
    cp /bin/busybox "$root/bin/busybox"
    # Every applet busybox has (sh with trap, env, cat, echo, sleep, true,
    # false, printf, head, dd, wget, tr, base64, seq, yes, kill, ls, mkdir, rm,
    # id, ...), plus /usr/bin/env for '#!/usr/bin/env' scripts.
    for a in $(/bin/busybox --list); do
        [ "$a" = busybox ] || ln -sf busybox "$root/bin/$a"
    done
    for a in sh env cat echo sleep true false printf head dd wget tr base64 seq yes kill ls mkdir rm id; do
        [ -L "$root/bin/$a" ] || die "busybox has no applet '$a'"
    done
    ln -sf ../../bin/env "$root/usr/bin/env"
    printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$root/etc/passwd"
    printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
    tar -C "$root" -c . | docker import --change 'CMD ["/bin/sh"]' - "$BUSYBOX_IMAGE" >/dev/null
    log "image $BUSYBOX_IMAGE: built"
fi

if have_image "$NOSHELL_IMAGE"; then
    log "image $NOSHELL_IMAGE: present"
else
    log "image $NOSHELL_IMAGE: building"
    root=$workdir/noshell
    mkdir -p "$root"/{busybox-bin,etc,tmp,proc,sys,dev}
    chmod 1777 "$root/tmp"
    cp /bin/busybox "$root/busybox-bin/busybox"
    # No /bin at all, and no shell applet anywhere: only exec-form commands run.
    for a in env printenv echo cat sleep true false; do ln -sf busybox "$root/busybox-bin/$a"; done
    printf 'root:x:0:0:root:/:/busybox-bin/false\n' >"$root/etc/passwd"
    tar -C "$root" -c . | docker import \
        --change 'ENV PATH=/busybox-bin' --change 'CMD ["/busybox-bin/env"]' - "$NOSHELL_IMAGE" >/dev/null
    log "image $NOSHELL_IMAGE: built"
fi

if have_image "$PYTHON_IMAGE"; then
    log "image $PYTHON_IMAGE: present"
else
    mirror=$(awk '/^URIs:/ && $2 ~ /\/debian\/?$/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
    mirror=${mirror:-http://deb.debian.org/debian}
    log "image $PYTHON_IMAGE: debootstrap bookworm from $mirror (about 75 s)"
    root=$workdir/python
    debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
        bookworm "$root" "$mirror" >/var/log/primus-setup-debootstrap.log 2>&1 \
        || { tail -n 30 /var/log/primus-setup-debootstrap.log >&2; die "debootstrap failed"; }
    # The host's CA bundle (it may hold this network's egress CA) so pip and
    # apt inside containers reach the registries the host reaches.
    cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/var/log/*.log
    log "image $PYTHON_IMAGE: importing"
    tar -C "$root" -c . | docker import \
        --change 'ENV LANG=C.UTF-8' --change 'CMD ["/bin/bash"]' - "$PYTHON_IMAGE" >/dev/null
    docker run --rm "$PYTHON_IMAGE" python3 -c 'import venv, ssl' \
        || die "$PYTHON_IMAGE does not run python3"
    log "image $PYTHON_IMAGE: built"
fi

# ---------------------------------------------------------------- mlflow
if [ -n "${mlflow_pid:-}" ]; then
    log "mlflow server: waiting for the install"
    if ! wait "$mlflow_pid"; then
        tail -n 30 /var/log/primus-setup-mlflow.log >&2
        rm -rf "$MLFLOW_VENV"
        die "pip install $MLFLOW_REQ failed (log: /var/log/primus-setup-mlflow.log)"
    fi
    mlflow_version >/dev/null || die "mlflow installed but does not import"
    log "mlflow server: installed ($(mlflow_version))"
fi

# ---------------------------------------------------------------- second-round engines
# Each script is idempotent and cheap when its service already answers.
log "secret stores (pass, gnupg, moto)"
bash "$here/setup-secret-stores.sh" || die "setup-secret-stores.sh failed"
log "registry with a password"
bash "$here/setup-registry.sh" || die "setup-registry.sh failed"
# After the registry: Podman reads its insecure-registry setting when its service starts.
log "podman (rootful API service, rootless user)"
bash "$here/setup-podman.sh" || die "setup-podman.sh failed"
log "a stand-in Primus image and a second user (launcher-mode and owner-scope tests)"
bash "$here/setup-primus-standin.sh" || die "setup-primus-standin.sh failed"
log "mlflow artifact stores (boto3, moto)"
bash "$here/setup-mlflow-stores.sh" || die "setup-mlflow-stores.sh failed"

log "engines ready"
