"""GPUs: which ones a host has, which ones a job asked for, which ones it gets.

- ``model``: the ``Gpu`` record and the host root (``PRIMUS_RUNNER_HOST_ROOT``).
- ``rocm``, ``cuda``, ``discovery``: discovery per vendor from sysfs/proc under the host root.
- ``selection``: ``all | N | LIST`` parsed and resolved against what was found.
- ``holders``: which GPUs other runner containers (and launches in progress) hold, and
  the race-free claim of free ones (an flock'd lease directory).
- ``slurm``: a Slurm step's allocation mapped to the node's devices.
- ``planning``: a selection as the plan's devices, environment and problems.
"""

from runner.gpus.discovery import discover
from runner.gpus.model import Gpu, GpuError, host_root

__all__ = ["Gpu", "GpuError", "discover", "host_root"]
