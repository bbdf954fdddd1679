"""The command line's grammar (``runner.cli.parser``): what is scouted before the parser is built, argv →
the parsed namespace for each command, the engines whose flags a command takes, and usage errors
(exit 2, one line and its fix, masked)."""

from __future__ import annotations

import pytest

from runner.cli.parser import Scouted, build_parser, option_engines, scout


@pytest.mark.parametrize(("argv", "scouted"), [
    (["up", "--image", "x"], Scouted("up")),
    (["--config", "c.yaml", "plan", "--engine", "slurm", "--", "--engine", "x"], Scouted("plan", "slurm", "c.yaml")),  # not past --
    (["--json", "ps", "--env-file", "e"], Scouted("ps", env_file="e")),  # after the command too
    (["--dry-run", "--debug", "-q", "up", "--engine=process"], Scouted("up", "process")),
    (["--bogus"], Scouted()),
    (["--config"], Scouted()),  # a value missing: unknown, the full parser reports it
    ([], Scouted()),
])
def test_scout(argv, scouted):
    assert scout(argv) == scouted


def _parse(argv):
    return build_parser(scout(argv)).parse_args(argv)


@pytest.mark.parametrize(("argv", "expected"), [
    (["up", "-e", "A=1", "-v", "/a:/b", "-w", "/w", "--gpu", "none", "-d", "--", "python", "x.py"],
     {"cmd": "up", "env": ["A=1"], "volume": ["/a:/b"], "workdir": "/w", "gpu": "none", "detach": True, "command": ["python", "x.py"]}),
    (["plan", "--engine", "slurm", "--nodes", "2", "--", "true"], {"cmd": "plan", "engine": "slurm", "nodes": 2, "command": ["true"]}),
    (["up", "--json"], {"cmd": "up", "json": True}),  # a global option after the command
    (["--json", "up"], {"cmd": "up", "json": True}),
    (["--dry-run", "down", "a", "b"], {"cmd": "down", "global_dry_run": True, "names": ["a", "b"], "dry_run": False}),
    (["logs", "run-1", "-f", "--tail", "5"], {"cmd": "logs", "name": "run-1", "follow": True, "tail": 5}),
    (["exec", "-it", "job", "bash", "-l"], {"cmd": "exec", "interactive": True, "tty": True, "name": "job", "command": ["bash", "-l"]}),
    (["runs", "gc", "--older-than", "30d"], {"cmd": "runs", "runs_cmd": "gc", "older_than": "30d"}),
    (["runs", "-n", "3", "--state", "failed"], {"cmd": "runs", "runs_cmd": None, "limit": 3, "state": "failed"}),
    (["build", "-t", "me/img:1", "-f", "Dockerfile"], {"cmd": "build", "tag": "me/img:1", "file": "Dockerfile"}),
    (["submit", "-N", "2", "--wait", "--", "x"], {"cmd": "submit", "nodes": 2, "wait": True, "command": ["x"]}),
    (["check", "--timeout", "2.5", "--online"], {"cmd": "check", "timeout": 2.5, "online": True}),
    (["trust", "--show"], {"cmd": "trust", "show": True, "revoke": False}),
    (["completion", "zsh"], {"cmd": "completion", "shell": "zsh"}),
    (["node-agent", "--cleanup", "12"], {"cmd": "node-agent", "cleanup": "12", "plan_file": None}),
])
def test_argv_to_namespace(argv, expected):
    parsed = vars(_parse(argv))
    assert {key: parsed.get(key, "<absent>") for key in expected} == expected


def test_submit_does_not_take_dockers_e():
    # sbatch's -e is its error file: on submit, docker's -e would mean something else
    with pytest.raises(SystemExit) as exit_:
        _parse(["submit", "-e", "A=1", "--", "x"])
    assert exit_.value.code == 2
    assert vars(_parse(["submit", "--env", "A=1", "--", "x"]))["env"] == ["A=1"]


def test_a_run_configures_only_the_command_it_runs():
    def options_of(parser, name):
        sub = next(a for a in parser._actions if a.dest == "cmd").choices[name]
        return {flag for action in sub._actions for flag in action.option_strings}
    scouted = build_parser(Scouted("ps"))
    assert "--all-users" in options_of(scouted, "ps")
    assert list(next(a for a in scouted._actions if a.dest == "cmd").choices) == ["ps"]  # no other command's parser is built
    assert "--image" in options_of(build_parser(), "up")


@pytest.mark.parametrize(("command", "engine", "engines"), [
    ("up", None, ("docker",)),
    ("up", "podman", ("docker",)),  # an alias: the engine it means
    ("plan", "direct", ("process",)),
    ("shell", "nope", ()),  # unknown: the launch says so
    ("ps", "nope", ("docker", "slurm", "process")),  # a verb: every engine's flags
    ("submit", None, ("docker", "slurm", "process")),
])
def test_option_engines(command, engine, engines):
    assert option_engines(command, engine) == engines


@pytest.mark.parametrize(("argv", "error", "fix"), [
    (["up", "--imag", "x"], "error: unknown option '--imag': did you mean '--image'?", "  fix: primus-runner up --help lists its options"),
    (["up", "--gpu", "amd"], "error: argument --gpu: 'amd' is not one of rocm, cuda, none", "  fix: primus-runner up --help lists its usage"),
    (["runs", "gc"], "error: the following arguments are required: --older-than", "  fix: primus-runner runs gc --help lists its usage"),
])
def test_a_usage_error_is_exit_2_one_line_and_its_fix(cli, argv, error, fix):
    rc, out, err = cli(*argv)
    lines = err.splitlines()
    assert rc == 2 and out == "" and len(lines) == 2, err
    assert lines[0].startswith(error) and lines[1].startswith(fix), err


def test_a_secret_quoted_by_a_usage_error_is_masked(cli):
    canary = "canary-parser-3c1f9e0d"
    rc, _, err = cli("up", "--gpu", canary, env={"HF_TOKEN": canary})
    assert rc == 2 and canary not in err and "***" in err, err
