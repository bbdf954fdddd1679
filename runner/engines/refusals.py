"""What a launch on this host refuses of a plan before anything exists (exit 2, each problem named).

One method, ``engine.refusals(plan, config)`` (``EngineBase``: none), that ``up``, ``plan``, every dry
run and ``check`` call: ``check`` refuses exactly what ``up`` would, with the same message. Each engine
that runs here names its own host checks (the functions below); one that runs elsewhere (Slurm: on
the nodes) has none.
"""

from __future__ import annotations

import os

from runner.errors import Problem


def missing_devices(plan, config) -> list[Problem]:
    """A container engine's: each device of the plan that is not on this host, blamed on what asked
    for it (the GPU flavor, or a --device / config entry). The daemon would refuse it at start."""
    from runner.plan import flavor_devices

    listed = [str(d) for d in (config.get("container", "options", "device") or [])]
    problems = []
    for device in plan.container.devices:
        path = device.split(":")[0]
        if not path.startswith("/") or os.path.exists(path):
            continue  # a CDI name (vendor/class=name) is the engine's to resolve
        if device in flavor_devices(plan.job.gpu):
            problems.append(Problem(f"device {path} (needed by --gpu {plan.job.gpu}) does not exist on this host",
                                    hint="install the GPU driver, or run with --gpu none / the other flavor"))
            continue
        where = config.where(("container", "options", "device", listed.index(device))) if device in listed else None
        problems.append(Problem(
            f"device {path} ({'--device' if where == 'command line' else where or 'config'}) does not exist on this host",
            where=where if where != "command line" else None,
            hint="fix the path or remove the entry (primus-runner plan --verbose shows where each device comes from)"))
    return problems


def host_program(request, config) -> list[Problem]:
    """The process engine's, of its request: the working directory exists and the program is installed."""
    problems = []
    if not os.path.isdir(request.cwd):
        where = config.where(("container", "options", "workdir"))
        problems.append(Problem(f"the working directory {request.cwd} ({'--workdir' if where == 'command line' else 'workdir'}) "
                                "does not exist on this host", where=where if where != "command line" else None,
                                hint="create it, or set the workdir to a directory of this host (the process engine runs there)"))
    if request.argv and request.program is None:
        problems.append(not_installed(request.argv[0]))
    return problems


def not_installed(name: str) -> Problem:
    return Problem(f"{name} is not installed on this host",
                   hint="install it or give its path; for the Primus direct launcher, install Primus (or set "
                        "PRIMUS_PATH to its checkout), or set direct.entry")
