"""The slurm: section with the command line on top (runner.engines.slurm.settings): what each source
sets, what is refused with file:line, and that plan's check of it loads nothing of submit's side."""

from __future__ import annotations

import subprocess
import sys

import pytest

from runner.config import load_config
from runner.engines.slurm.flags import SlurmFlags
from runner.engines.slurm.settings import config_problems, flag_directives, given_keys, settings_from
from runner.errors import ConfigError

def test_the_command_line_beats_the_section(work):
    config = load_config(trust_project=True)
    s = settings_from(config, SlurmFlags())
    assert (s.nodes, s.partition, s.account, s.master_port, s.sbatch_args) == (3, "debug", "proj1", 2345, ("--exclusive",))
    s = settings_from(config, SlurmFlags(nodes=2, partition="gpu", time="10", gpus_per_node=4))
    assert (s.nodes, s.partition, s.time, s.gpus_per_node) == (2, "gpu", "10", 4)


def test_a_partition_given_as_a_raw_flag_leaves_the_sections_out(work):
    s = settings_from(load_config(trust_project=True), SlurmFlags(args=("-p", "big")))
    assert s.partition is None  # sbatch gets the user's own -p; no directive repeats the file's


@pytest.mark.parametrize("bad", ['["--export=ALL"]', '["--get-user-env"]', '["--x\\n#SBATCH --y"]'])
def test_sbatch_args_may_not_widen_the_export_and_the_problem_has_its_line(slurm_project, work, bad):
    (work / ".primus.yaml").write_text(slurm_project.replace('["--exclusive"]', bad))
    config = load_config(trust_project=True)
    with pytest.raises(ConfigError):
        settings_from(config, SlurmFlags())
    problems = config_problems(config)
    assert problems and all(str(work / ".primus.yaml") in (p.where or "") for p in problems), problems


def test_a_directive_smuggled_in_a_flag_value_is_refused(work):
    with pytest.raises(ConfigError):
        settings_from(load_config(trust_project=True), SlurmFlags(partition="debug\n#SBATCH --export=ALL"))


def test_a_clean_section_has_no_problems(work):
    assert config_problems(load_config(trust_project=True)) == []


def test_given_keys_reads_long_short_and_joined_forms():
    assert given_keys(("--partition=x", "-N", "2", "-tX", "--qos", "q")) == {"partition", "nodes", "time", "qos"}


def test_cluster_flags_render_in_a_fixed_order(work):
    s = settings_from(load_config(trust_project=True), SlurmFlags(qos="high", exclusive=True, nodelist="n[1-2]"))
    assert flag_directives(s) == ["--nodelist=n[1-2]", "--qos=high", "--exclusive"]


def test_checking_the_section_loads_nothing_of_submits_side():
    code = ("import sys; from runner.engines.slurm import settings; "
            "print(sorted(m for m in sys.modules if m.startswith('runner.engines.slurm.')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "script" not in loaded and "node" not in loaded and "engine'" not in loaded, loaded
    assert "runner.engines.slurm.flags" in loaded
