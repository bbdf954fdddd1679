"""Backends consume a ``LaunchPlan``; each is one module (docker, slurm)."""
