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


def _settings(work, yaml_text: str, flags: SlurmFlags = SlurmFlags()):
    (work / ".primus.yaml").write_text(yaml_text)
    return settings_from(load_config(trust_project=True), flags)


@pytest.mark.parametrize("yaml_text, flags, expected", [
    ("slurm:\n  qos: high\n  exclusive: true\n  mem: 4G\n", SlurmFlags(), ("--qos=high", "--mem=4G", "--exclusive")),
    ("slurm:\n  qos: high\n  exclusive: true\n", SlurmFlags(args=("--qos=low",)), ("--exclusive",)),  # the flag beats its key
    ("slurm:\n  exclusive: false\n", SlurmFlags(), ()),
])
def test_the_launchers_slurm_keys_become_flags_unless_the_command_line_sets_them(work, yaml_text, flags, expected):
    assert _settings(work, yaml_text, flags).config_flags == expected


@pytest.mark.parametrize("yaml_text, flags, asked, directive", [
    ("slurm:\n  gpus_per_node: 8\n", SlurmFlags(), None, 8),  # the user's file asks Slurm for them
    ("slurm:\n  gpus_per_node: 8\n", SlurmFlags(gpus_per_node=2), 2, 2),
    ("slurm:\n  gpus_per_node: 8\n", SlurmFlags(args=("--gpus-per-node=4",)), None, None),  # the user's own flag says it
    ("container:\n  gpus: '3'\nslurm:\n  gpus_per_node: 8\n", SlurmFlags(), 3, 3),  # --gpus N: N per node
    ("{}\n", SlurmFlags(), None, None),  # a default never asks Slurm for GPUs
])
def test_the_gpu_count_asked_of_slurm(work, yaml_text, flags, asked, directive):
    settings = _settings(work, yaml_text, flags)
    assert (settings.gpus_asked, settings.gpus_directive) == (asked, directive)


def test_output_and_error_from_the_section_unless_a_raw_flag_sets_them(work):
    settings = _settings(work, "slurm:\n  output: /x/%j.out\n  error: /x/%j.err\n", SlurmFlags(args=("-o", "/y")))
    assert (settings.output, settings.error) == (None, "/x/%j.err")
    assert _settings(work, "slurm:\n  time: 10\n", SlurmFlags(args=("-t", "5"))).time is None


@pytest.mark.parametrize("yaml_text, flags, message, from_file", [
    ("slurm:\n  nodes: 0\n", SlurmFlags(), "slurm.nodes 0: a job needs at least one node", True),
    ("{}\n", SlurmFlags(nodes=0), "--nodes 0: a job needs at least one node", False),
    ("slurm:\n  time: soon\n", SlurmFlags(), "slurm.time soon: not a time limit such as 30, 4:00:00 or 2-00:00:00", True),
    ("slurm:\n  partition: 'a b'\n", SlurmFlags(), "slurm.partition 'a b': not one name in Slurm's own syntax", True),
    ("{}\n", SlurmFlags(partition="a;b"), "--partition 'a;b': not one name in Slurm's own syntax", False),
    ("slurm:\n  constraint: 'a b'\n", SlurmFlags(), "slurm.constraint 'a b': not features with & | [ ] ( ) *N, e.g. a100&ib", True),
    ("slurm:\n  mail-user: 'a b'\n", SlurmFlags(), "slurm.mail-user 'a b': not a user name or mail address", True),
    ("slurm:\n  output_dir: \"/x\\ny\"\n", SlurmFlags(),
     "slurm.output_dir: holds a control character (U+000A); it would go into the batch script or sbatch's command line", True),
    ("slurm:\n  sbatch_args: ['--export-file=/x']\n", SlurmFlags(), "slurm.sbatch_args may not set '--export-file'", True),
])
def test_each_refused_value_is_named_and_blamed_on_its_source(work, yaml_text, flags, message, from_file):
    with pytest.raises(ConfigError) as info:
        _settings(work, yaml_text, flags)
    assert [(p.message, p.where) for p in info.value.problems] == [(message, f"{work / '.primus.yaml'}:2" if from_file else None)]
    assert info.value.exit_code == 2
