#!/usr/bin/env bash
# A fake GPU host for the GPU-selection tests (no GPU needed): a directory laid out like
# /sys, /dev and /proc/driver/nvidia of an 8-GPU AMD host that also has 4 NVIDIA entries.
# The runner reads it with PRIMUS_RUNNER_HOST_ROOT=$FAKE_GPU_ROOT; real Docker and Podman
# accept its device nodes (made with mknod) as --device sources. Slurm's gres.conf in
# .ci/setup-engines.sh lists its render nodes.
#
#   AMD: KFD topology with 3 CPU nodes then 8 GPU nodes (nodes/3 … nodes/10: more than ten
#        nodes, so a lexicographic sort shows), render nodes renderD128…135, display nodes
#        card1…card8 (card0 is a BMC VGA with no KFD node: cardN is not renderD(128+N)),
#        PCI devices with drm/ directories and NUMA nodes 0 (GPUs 0-3) and 1 (GPUs 4-7).
#   NVIDIA: 4 GPUs in /proc/driver/nvidia/gpus/<BDF>/information whose device minors are
#        not their indices (2, 3, 0, 1), /dev/nvidia<minor>, nvidiactl, nvidia-uvm.
#   CDI: a spec of kind nvidia.com/gpu (what `nvidia-ctk cdi generate` writes on a real host)
#        in $FAKE_GPU_CDI_DIR (/etc/cdi): devices "0".."3", each GPU's /dev/nvidia<minor>
#        plus /dev/nvidiactl taken from the fake tree, so Podman can run CUDA jobs on them.
#        No "all" device: a request for nvidia.com/gpu=all stays unresolvable here.
#
# Idempotent: the tree is rebuilt only when this script changed (a stamp holds its hash);
# the CDI spec is rewritten only when its content differs. Needs root (mknod, /etc/cdi).
set -euo pipefail
ROOT=${FAKE_GPU_ROOT:-/var/lib/primus-fake-gpus}
CDI_DIR=${FAKE_GPU_CDI_DIR:-/etc/cdi}
MINORS=(2 3 0 1)  # NVIDIA GPU index -> device minor
die() { printf '[setup-fake-gpus] ERROR: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root (mknod)"

write_cdi_spec() {
    local spec=$CDI_DIR/primus-fake-nvidia.json devices="" i m
    for i in 0 1 2 3; do
        m=${MINORS[$i]}
        devices+="${devices:+,}
    {\"name\": \"$i\", \"containerEdits\": {\"deviceNodes\": [
      {\"path\": \"/dev/nvidia$m\", \"hostPath\": \"$ROOT/dev/nvidia$m\", \"type\": \"c\", \"major\": 195, \"minor\": $m},
      {\"path\": \"/dev/nvidiactl\", \"hostPath\": \"$ROOT/dev/nvidiactl\", \"type\": \"c\", \"major\": 195, \"minor\": 255}]}}"
    done
    local text="{\"cdiVersion\": \"0.5.0\", \"kind\": \"nvidia.com/gpu\", \"devices\": [$devices
]}"
    if [ "$(cat "$spec" 2>/dev/null)" = "$text" ]; then
        echo "[setup-fake-gpus] $spec: present"
        return
    fi
    mkdir -p "$CDI_DIR"
    printf '%s\n' "$text" >"$spec.new.$$"
    mv "$spec.new.$$" "$spec"
    echo "[setup-fake-gpus] $spec: nvidia.com/gpu=0..3"
}
write_cdi_spec

sum=$(sha256sum "$0" | cut -c1-16)
if [ "$(cat "$ROOT/.recipe" 2>/dev/null)" = "$sum" ] && [ -c "$ROOT/dev/kfd" ]; then
    echo "[setup-fake-gpus] $ROOT: present"
    exit 0
fi
tmp=$ROOT.new.$$
rm -rf "$tmp"
mkdir -p "$tmp/dev/dri" "$tmp/sys/class/kfd/kfd/topology/nodes" "$tmp/sys/bus/pci/devices" "$tmp/proc/driver/nvidia/gpus"
topo=$tmp/sys/class/kfd/kfd/topology/nodes

mknod "$tmp/dev/kfd" c 236 0
echo 236:0 >"$tmp/sys/class/kfd/kfd/dev"
mknod "$tmp/dev/dri/card0" c 226 0   # the BMC's VGA: a display node with no KFD node

for n in 0 1 2; do
    mkdir -p "$topo/$n"
    echo 0 >"$topo/$n/gpu_id"
    printf 'cpu_cores_count 32\nsimd_count 0\nmem_banks_count 1\nvendor_id 0\ndevice_id 0\nlocation_id 0\ndomain 0\ndrm_render_minor 0\nunique_id 0\n' >"$topo/$n/properties"
done
for i in 0 1 2 3 4 5 6 7; do
    node=$((i + 3)) minor=$((128 + i)) card=$((i + 1)) bus=$((0x11 + 0x10 * i))
    bdf=$(printf '0000:%02x:00.0' "$bus")
    mknod "$tmp/dev/dri/renderD$minor" c 226 "$minor"
    mknod "$tmp/dev/dri/card$card" c 226 "$card"
    mkdir -p "$topo/$node" "$tmp/sys/bus/pci/devices/$bdf/drm/renderD$minor" "$tmp/sys/bus/pci/devices/$bdf/drm/card$card"
    echo $((i / 4)) >"$tmp/sys/bus/pci/devices/$bdf/numa_node"
    echo $((1000 + i)) >"$topo/$node/gpu_id"
    printf 'cpu_cores_count 0\nsimd_count 1216\nmem_banks_count 1\nvendor_id 4098\ndevice_id 29857\nlocation_id %d\ndomain 0\ndrm_render_minor %d\nunique_id %d\nnum_xcc 8\ngfx_target_version 90402\n' \
        "$((bus << 8))" "$minor" "$((0x5a1c0ffee0000000 + i))" >"$topo/$node/properties"
done

mknod "$tmp/dev/nvidiactl" c 195 255
mknod "$tmp/dev/nvidia-uvm" c 510 0
mknod "$tmp/dev/nvidia-uvm-tools" c 510 1
for i in 0 1 2 3; do
    bdf=$(printf '0000:%02x:00.0' $((0x17 + 0x10 * i)))
    m=${MINORS[$i]}
    mknod "$tmp/dev/nvidia$m" c 195 "$m"
    mkdir -p "$tmp/proc/driver/nvidia/gpus/$bdf"
    printf 'Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t %d\nGPU UUID: \t GPU-7e57c0de-0000-4000-8000-00000000000%d\nVideo BIOS: \t 96.00.99.00.01\nBus Type: \t PCIe\nDMA Size: \t 52 bits\nDMA Mask: \t 0xfffffffffffff\nBus Location: \t %s\nDevice Minor: \t %d\nGPU Excluded:\t No\n' \
        $((100 + i)) "$i" "$bdf" "$m" >"$tmp/proc/driver/nvidia/gpus/$bdf/information"
    mkdir -p "$tmp/sys/bus/pci/devices/$bdf"
    echo $((i / 2)) >"$tmp/sys/bus/pci/devices/$bdf/numa_node"
done

chmod -R a+rX "$tmp"
echo "$sum" >"$tmp/.recipe"
rm -rf "$ROOT.old"
[ -e "$ROOT" ] && mv "$ROOT" "$ROOT.old"
mv "$tmp" "$ROOT"
rm -rf "$ROOT.old"
echo "[setup-fake-gpus] $ROOT: 8 AMD GPUs (renderD128-135), 4 NVIDIA GPUs"
