"""The Slurm engine's flags: declared as data for the CLI, typed as SlurmFlags, found in a launch's options."""

from __future__ import annotations

from dataclasses import fields

from runner.engines.slurm.flags import NAME, OPTIONS, SlurmFlags, cli_flags, of, options
from runner.options import RunOptions

PARSED = {"nodes": 2, "partition": "gpu", "time": "4:00:00", "account": "proj", "gpus_per_node": 8, "nodelist": "n[1-2]",
          "exclude": None, "qos": "high", "reservation": None, "exclusive": True, "gres": "gpu:8", "constraint": None,
          "mem": "0", "cpus_per_task": 16, "mail_type": "END", "mail_user": None, "dependency": "afterok:12",
          "requeue": False, "signal": "B:USR1@90"}


def test_a_launch_commands_parsed_options_become_slurm_flags():
    for command in ("submit", "up", "plan"):
        flags = cli_flags(PARSED, command)
        assert flags == SlurmFlags(nodes=2, partition="gpu", time="4:00:00", account="proj", gpus_per_node=8,
                                   nodelist="n[1-2]", qos="high", exclusive=True, gres="gpu:8", mem="0", cpus_per_task=16,
                                   mail_type="END", dependency="afterok:12", signal="B:USR1@90")


def test_a_command_that_launches_nothing_has_no_slurm_flags():
    assert cli_flags(PARSED, "ps") is None and cli_flags({}, "logs") is None


def test_a_launch_without_slurm_flags_gets_the_defaults():
    assert of(RunOptions(command=("true",))) == SlurmFlags()
    given = SlurmFlags(nodes=4)
    assert of(RunOptions(command=("true",), engine_flags=((NAME, given),))) is given
    assert of(RunOptions(command=("true",), engine_flags=(("docker", object()),))) == SlurmFlags()


def test_every_declared_option_lands_in_a_field_of_slurm_flags():
    names = {f.name for f in fields(SlurmFlags)}
    for option in options():
        dest = option.dest or option.flags[-1].lstrip("-").replace("-", "_")
        assert dest in names, option.flags
    assert options() is OPTIONS
    switches = {o.flags[0] for o in OPTIONS if o.switch}
    assert switches == {"--exclusive", "--requeue"}
