"""Slurm: the engine that submits (``engine``), the batch script (``script``), the jobs it
submits and follows (``controller``, ``job_directory``, ``submit``, ``job_state``, ``job_output``,
``job_wait``, ``job_cancel``), and the node agent ``srun`` starts on every node (``agent``).

This file imports nothing: the node agent starts on every node of a job, and it must not
load the submit side to get there. ``SlurmEngine`` is looked up on first use.
"""

_ENGINE_NAMES = ("SlurmEngine", "SlurmOptions", "embedded_secrets", "node_command")


def __getattr__(name: str):
    if name in _ENGINE_NAMES:
        from runner.engines.slurm import engine

        return getattr(engine, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
