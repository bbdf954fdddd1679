"""One check of a Slurm value, whoever gives it (``runner.engines.slurm.values``): ``submit``'s
flags, the launcher's ``slurm`` flags and a config file's ``slurm:`` key refuse the same values
with the same words, each naming where the value came from (the flag as given, or file:line),
and ``plan``, ``check`` and ``submit`` report a config's bad value alike."""

from __future__ import annotations

import pytest

from runner.cli import main

# (submit's flag, the launcher's spelling, the config key, a bad value, what every source says about it)
BAD = [
    ("--nodes", "-N", "nodes", "0", "a job needs at least one node"),
    ("--gpus-per-node", "--gpus-per-node", "gpus_per_node", "-1", "the count is negative"),
    ("--time", "-t", "time", "4 hours", "not a time limit"),
    ("--time", "-t", "time", "1h", "not a time limit"),
    ("--partition", "-p", "partition", "a b", "not one name in Slurm's own syntax"),
    ("--account", "-A", "account", "x;y", "not one name in Slurm's own syntax"),
    ("--mem", "--mem", "mem", "lots", "not a size such as 64G"),
    ("--cpus-per-task", "--cpus-per-task", "cpus-per-task", "0", "at least 1"),
]
GOOD = [("-N", "2"), ("-t", "30"), ("-t", "4:00:00"), ("-t", "2-00:00:00"), ("-t", "UNLIMITED"), ("-p", "debug"),
        ("-A", "proj_1"), ("--gpus-per-node", "gpu:8"), ("--mem", "0"), ("--cpus-per-task", "8")]


def _config(value: str, key: str) -> str:
    quoted = value if value.lstrip("-").isdigit() else f'"{value}"'
    return f"container:\n  gpu: none\n  options:\n    image: primus-test/busybox:latest\nslurm:\n  {key}: {quoted}\n"


def _run(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize("flag,short,key,value,says", BAD, ids=[f"{b[2]}={b[3]}" for b in BAD])
def test_a_bad_value_is_refused_alike_from_a_flag_the_launcher_and_a_file(work, capsys, flag, short, key, value, says):
    image = "primus-test/busybox:latest"
    code, text = _run(capsys, "submit", "--dry-run", "--gpu", "none", "--image", image, flag, value, "--", "true")
    assert code == 2 and f"{flag} " in text and says in text, text
    given = [f"{short}={value}"] if short.startswith("--") else [short, value]  # the launcher's rule: "-1" alone would be a flag
    code, text = _run(capsys, "--dry-run", "slurm", *given, "--", "--image", image, "--", "train")
    assert code == 2 and f"{short} " in text and says in text, text  # before: -t/-p/-A/--mem went to sbatch unchecked
    (work / ".primus.yaml").write_text(_config(value, key))
    for argv in (("plan", "--gpu", "none", "--", "true"), ("check", "--engine", "slurm", "--gpu", "none"),
                 ("submit", "--dry-run", "--gpu", "none", "--", "true")):
        code, text = _run(capsys, "--trust-project", *argv)
        assert code == 2 and f".primus.yaml:6: slurm.{key} " in text and says in text, (argv, text)
        assert "must be at least" not in text  # one rule, not the schema's second one


@pytest.mark.parametrize("flag,value", GOOD, ids=[f"{f}={v}" for f, v in GOOD])
def test_a_good_value_passes_from_the_launcher(work, capsys, flag, value):
    code, text = _run(capsys, "--dry-run", "slurm", flag, value, "--", "--image", "primus-test/busybox:latest", "--", "train")
    assert code == 0, text


def test_every_problem_is_listed_at_once_each_with_its_source(work, capsys):
    code, text = _run(capsys, "submit", "--dry-run", "--gpu", "none", "--image", "primus-test/busybox:latest",
                      "-N", "0", "-t", "1h", "-p", "a b", "--", "true")
    assert code == 2 and "3 problems" in text
    assert "--nodes 0:" in text and "--time 1h:" in text and "--partition 'a b':" in text


# --------------------------------------------------------------------------- one line of text
@pytest.mark.parametrize("char", ["\n", "\r", "\t", "\x1b", "\x00", "\x85", "\u2028"])
def test_a_script_value_refuses_every_control_character(char):
    from runner.engines.slurm.values import ScriptValue
    from runner.errors import ConfigError

    with pytest.raises(ConfigError, match="slurm.output_dir: holds a control character"):
        ScriptValue(f"/tmp/x{char}#SBATCH --export=ALL", "slurm.output_dir")
    assert ScriptValue("/tmp/a b/ü", "slurm.output_dir") == "/tmp/a b/ü"


def test_the_batch_script_is_built_of_single_lines_only():
    from runner.engines.slurm.values import script_text
    from runner.errors import ConfigError

    assert script_text(["#!/bin/bash", "#SBATCH --nodes=2"]) == "#!/bin/bash\n#SBATCH --nodes=2"
    with pytest.raises(ConfigError, match="'#SBATCH --chdir'"):
        script_text(["#SBATCH --chdir=/w\ntouch /tmp/owned"])


@pytest.mark.parametrize("key,value,say", [
    ("output_dir", '"/tmp/out\\n#SBATCH --export=ALL"', "slurm.output_dir"),
    ("sbatch_args", '["--comment=a\\ttouch /tmp/x"]', "slurm.sbatch_args[0]"),
    ("output", '"o-%j\\r.out"', "slurm.output"),
])
def test_a_config_value_with_a_control_character_is_an_exit_2_naming_the_key(work, capsys, key, value, say):
    (work / ".primus.yaml").write_text(f"container:\n  gpu: none\n  options:\n    image: primus-test/busybox:latest\nslurm:\n  {key}: {value}\n")
    def files():  # outside the validation cache (XDG_CACHE_HOME), which planning keeps
        return sorted(p.relative_to(work) for p in work.rglob("*") if not p.is_relative_to(work / "cache"))

    before = files()
    code, text = _run(capsys, "--trust-project", "submit", "--dry-run", "--gpu", "none", "--", "true")
    assert code == 2 and f".primus.yaml:6: {say}: holds a control character" in text, text
    assert "Traceback" not in text and "#SBATCH" not in text.split("holds", 1)[0]
    assert files() == before, "nothing left behind: no state directory, no job directory"
