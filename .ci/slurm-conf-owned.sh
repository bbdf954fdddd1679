#!/usr/bin/env bash
# Exit 0 when FILE may be (re)written by .ci/setup-engines.sh: it is absent, empty, or
# carries the marker line that script writes. Exit 1 (saying so) for any other
# slurm.conf: a real cluster's configuration is never replaced.
#     bash .ci/slurm-conf-owned.sh /etc/slurm/slurm.conf
set -euo pipefail
MARKER="# Written by .ci/setup-engines.sh"
file=${1:?usage: slurm-conf-owned.sh FILE}
if [ ! -s "$file" ] || grep -qF "$MARKER" "$file"; then
    exit 0
fi
echo "$file exists and was not written by .ci/setup-engines.sh (no '$MARKER' line): refusing to overwrite it." >&2
echo "That script sets up a throw-away test machine; move the file away only if that is what this machine is." >&2
exit 1
