"""``up --engine NAME`` and ``plan --engine NAME``: a launch runs on the engine the registry names, so a
toy engine registered by its one line in ``ENGINES`` launches, watches and dry-runs through the
command line with nothing else edited; an option of ``up`` the engine does not honour is exit 2."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

from runner.cli import main
from runner.engines import ENGINES
from runner.engines.base import EngineBase, Launched, Option

CALLS: list[str] = []
FLAGS: list = []  # the engine's own flags, as its launch (or dry run) received them


@dataclass(frozen=True)
class ToyRequest:
    plan: object
    env: dict = field(default_factory=dict)
    flags: object = None  # the engine's own flags, decided into the request

    def render(self) -> str:
        return f"toy would run {' '.join(self.plan.job.command)}"

    def to_dict(self) -> dict:
        return {"command": list(self.plan.job.command)}

    def with_run_env(self, pairs: dict) -> "ToyRequest":
        return replace(self, env={**self.env, **pairs})


@dataclass(frozen=True)
class ToyFlags:
    """The toy engine's own typed flags (as ``runner.engines.slurm.flags.SlurmFlags`` is Slurm's)."""

    speed: int | None = None


class ToyLaunchEngine(EngineBase):
    """The whole ``runner.engines.base.Engine`` protocol, in memory: the job 'exits' 7. It declares one
    flag of its own (``--toy-speed``), as an engine does: no edit of ``runner.cli`` or ``runner.options``."""

    name = "toylaunch"
    audit_after = False
    computed_env: tuple[str, ...] = ()
    gpu_mode = "off"
    runs_in_container = False

    @staticmethod
    def options():
        return (Option(("--toy-speed",), "how fast the toy runs", ("up", "plan"), type="int", metavar="N", group="Toy options"),)

    def cli_flags(self, values, command):
        return ToyFlags(values["toy_speed"]) if command in ("up", "plan") else None

    def settings(self, config, options):
        return None

    def preflight(self, plan, ctx):
        CALLS.append("preflight")

    def request(self, plan, ctx):
        return ToyRequest(plan, flags=ctx.options.engine_flags_for("toylaunch"))

    def resolve(self, request, ctx, dry_run=False):
        return request

    def dry_run(self, request, ctx):
        CALLS.append("dry_run")
        FLAGS.append(request.flags)
        ctx.out.result(request.render())

    def launch(self, request, connection):
        CALLS.append("launch")
        FLAGS.append(request.flags)  # launch sees the request and its connection: nothing else
        return Launched("toy-1", request.plan.job.name)

    def announce(self, launched, ctx, detached):
        CALLS.append(f"announce detached={detached}")

    def group_title(self, launched, request):
        return "toy job"

    def watch(self, launched, ctx, on_running=None):
        CALLS.append("watch")
        return 7

    def audit(self, launched, ctx):
        return []

    def finished(self, launched, ctx, exit_code):
        return {}


@pytest.fixture
def toy(work, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(work / "state"))
    # the image from a file: the toy runs no container, so it refuses --image as a container flag
    (work / "cfg.yaml").write_text("cache:\n  enabled: false\ncontainer:\n  options:\n    image: img:1\n")
    monkeypatch.setitem(ENGINES, "toylaunch", (__name__, "ToyLaunchEngine"))  # the engine's one registry line
    CALLS.clear()
    FLAGS.clear()
    yield ["--config", str(work / "cfg.yaml")]
    CALLS.clear()
    FLAGS.clear()


def test_up_launches_and_watches_on_the_engine_it_names(toy):
    assert main([*toy, "up", "--engine", "toylaunch", "--gpu", "none", "--", "true"]) == 7
    assert CALLS == ["preflight", "launch", "announce detached=False", "watch"]


def test_up_detach_and_plan_go_through_the_same_engine(toy, capsys):
    assert main([*toy, "up", "--engine", "toylaunch", "--detach", "--gpu", "none", "--", "true"]) == 0
    assert CALLS == ["preflight", "launch", "announce detached=True"]
    CALLS.clear()
    assert main([*toy, "plan", "--engine", "toylaunch", "--gpu", "none", "--", "echo", "hi"]) == 0
    assert CALLS == ["dry_run"] and "toy would run echo hi" in capsys.readouterr().out


def test_an_engines_own_flag_is_parsed_and_reaches_its_launch_with_no_cli_edit(toy, capsys):
    assert main([*toy, "up", "--engine", "toylaunch", "--toy-speed", "3", "--gpu", "none", "--", "true"]) == 7
    assert "launch" in CALLS and FLAGS == [ToyFlags(3)]
    FLAGS.clear()
    assert main([*toy, "plan", "--engine=toylaunch", "--toy-speed", "5", "--gpu", "none", "--", "true"]) == 0
    assert FLAGS == [ToyFlags(5)]
    with pytest.raises(SystemExit):
        main([*toy, "up", "--engine", "toylaunch", "--help"])
    shown = capsys.readouterr().out
    assert "--toy-speed N" in shown and "how fast the toy runs" in shown


def test_an_engines_flag_belongs_to_that_engine_only(toy, capsys):
    # without --engine toylaunch, `up` launches on the default engine, which has no such flag: argparse's exit 2
    with pytest.raises(SystemExit) as exited:
        main([*toy, "up", "--toy-speed", "3", "--gpu", "none", "--image", "img:1", "--", "true"])
    assert exited.value.code == 2 and CALLS == [] and FLAGS == []


@pytest.mark.parametrize("flag", ["--keep", "--build", "-i"])
def test_an_option_of_up_the_engine_does_not_honour_is_a_usage_error(toy, capsys, flag):
    code = main([*toy, "up", "--engine", "toylaunch", flag, "--gpu", "none", "--", "true"])
    assert code == 2 and CALLS == []
    assert f"the toylaunch engine does not take {flag}" in capsys.readouterr().err


def test_an_unknown_launch_engine_is_a_usage_error_naming_the_known_ones(toy, capsys):
    assert main([*toy, "up", "--engine", "nope", "--gpu", "none", "--", "true"]) == 2
    err = capsys.readouterr().err
    assert "unknown engine 'nope'" in err and "docker" in err and "slurm" in err


def test_plan_engine_slurm_is_submit_dry_run(toy, capsys):
    argv = ["--gpu", "none", "--image", "img:1", "--", "echo", "hi"]
    assert main([*toy, "plan", "--engine", "slurm", *argv]) == 0
    planned = capsys.readouterr().out
    assert main([*toy, "submit", "--dry-run", *argv]) == 0
    submitted = capsys.readouterr().out
    strip = lambda text: [line for line in text.splitlines() if "/runs/" not in line and "primus-" not in line]  # noqa: E731 run ids, names
    assert "#SBATCH --nodes=1" in planned and strip(planned) == strip(submitted)


@pytest.mark.parametrize("launch", [["plan", "--engine", "slurm"], ["up", "--engine", "slurm", "--dry-run"]])
def test_up_and_plan_engine_slurm_take_submits_slurm_options(toy, capsys, launch):
    """``up --engine slurm`` is ``submit --wait``, ``plan --engine slurm`` is ``submit --dry-run``: the job's
    Slurm options are theirs too, in submit's long spelling (up's -t is --tty), and reach the same batch script."""
    options = ["--nodes", "3", "--time", "9", "--partition", "p1", "--account", "a1", "--exclusive", "--constraint", "mi300x"]
    argv = ["--gpu", "none", "--image", "img:1", "--", "echo", "hi"]
    assert main([*toy, *launch, *options, *argv]) == 0
    planned = capsys.readouterr().out
    assert main([*toy, "submit", "--dry-run", *options, *argv]) == 0
    submitted = capsys.readouterr().out
    for directive in ("--nodes=3", "--time=9", "--partition=p1", "--account=a1", "--exclusive", "--constraint=mi300x"):
        assert f"#SBATCH {directive}\n" in planned, directive
    strip = lambda text: [line for line in text.splitlines() if "/runs/" not in line and "primus-" not in line]  # noqa: E731 run ids, names
    assert strip(planned) == strip(submitted)


@pytest.mark.parametrize("command", ["up", "plan"])
def test_a_slurm_option_without_engine_slurm_names_the_engine_it_belongs_to(toy, capsys, command):
    with pytest.raises(SystemExit) as exited:
        main([*toy, command, "--nodes", "2", "--gpu", "none", "--image", "img:1", "--", "true"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and CALLS == []
    assert "'--nodes' is an option of the slurm engine" in err and f"primus-runner {command} --engine slurm --nodes" in err
