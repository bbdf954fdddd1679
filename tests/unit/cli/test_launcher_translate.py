"""A parsed launcher invocation as the runner's typed options (``runner.cli.launcher_translate``): docker
run options onto ``LaunchFlags`` (or passed through, or refused with the reason and the fix), Slurm
flags as given with what the runner reads from them, and ``ModeOptions``."""

from __future__ import annotations

import pytest

from runner.cli.launcher_args import parse
from runner.cli.launcher_translate import _mount, container_flags, mode_options, overridden, slurm_flags, slurm_tokens
from runner.errors import ConfigError, UsageError
from runner.options import Sources


def test_docker_run_options_land_on_the_typed_flags():
    notices: list[str] = []
    flags, extra = container_flags(
        [("image", "i:1"), ("volume", "/a:/b"), ("mount", "type=bind,source=/s,target=/t,readonly"), ("privileged", None),
         ("gpus", "0"), ("pull", "always"), ("detach", None), ("cap-add", "SYS_NICE"), ("shm-size", "8g"), ("rm", None)],
        ["A=1"], notices)
    assert (flags.image, flags.env, flags.volume, flags.privileged, flags.cap_add, flags.shm_size) == (
        "i:1", ("A=1",), ("/a:/b", "/s:/t:ro"), True, ("SYS_NICE",), "8g")
    assert extra == {"gpus": "0", "pull": "always", "detach": True}
    assert notices == ["--rm: the runner always removes its container when the job ends (--keep, on up, keeps it)"]


def test_a_docker_option_the_runner_does_not_model_passes_through_checked():
    flags, _ = container_flags([("add-host", "db:10.0.0.2")], [], [])
    assert flags.run_options == (("add-host", "db:10.0.0.2"),)
    with pytest.raises(UsageError) as err:
        container_flags([("add-host", None)], [], [])
    assert err.value.message == "--add-host needs a value"


@pytest.mark.parametrize(("options", "message", "hint"), [
    ([("label-file", "f")], "container --label-file is refused: a label file's values would be copied into the container's labels unchecked",
     "pass each one as --label KEY=VALUE"),
    ([("bogus", None)], "--bogus is not a docker run option (docker would refuse it too)",
     "see `docker run --help`; the direct launcher's options go after --: container -- --OPTION … -- <Primus args>"),
    ([("help", None)], "--help goes before the -- of the mode", "primus-runner container --help"),
    ([("pull", "x")], "--pull 'x': one of missing, always, never", None),
    ([("image", None)], "--image needs a value", "--image VALUE"),
])
def test_what_the_runner_refuses_names_the_reason_and_the_fix(options, message, hint):
    with pytest.raises(UsageError) as err:
        container_flags(options, [], [])
    assert (err.value.message, err.value.hint) == (message, hint)


@pytest.mark.parametrize(("spec", "volume"), [
    ("type=bind,source=/s,target=/t", "/s:/t:rw"),
    ("src=/s,dst=/t,ro=1", "/s:/t:ro"),
    ("source=named,destination=/d", "named:/d:rw"),  # type defaults to volume
])
def test_a_mount_is_the_volume_it_means(spec, volume):
    assert _mount(spec) == volume


@pytest.mark.parametrize(("spec", "hint"), [
    ("type=tmpfs,target=/t", "e.g. --mount type=bind,source=/data,target=/data"),
    ("/a:/b", "use --volume /a:/b"),  # docker's -v syntax given to --mount
])
def test_a_mount_the_runner_does_not_take_is_refused(spec, hint):
    with pytest.raises(UsageError) as err:
        _mount(spec)
    assert "the runner takes bind and volume mounts as type=bind,source=SRC,target=DST[,readonly]" in err.value.message
    assert err.value.hint == hint


def test_slurm_tokens_by_the_launchers_rule():
    assert slurm_tokens(["-N", "2", "--exclusive", "-t5", "--time=1:00", "-p", "gpu", "--mem", "-x"]) == [
        ("nodes", "2", ["-N", "2"]), ("exclusive", None, ["--exclusive"]), ("time", "5", ["-t5"]),
        ("time", "1:00", ["--time=1:00"]), ("partition", "gpu", ["-p", "gpu"]), ("mem", None, ["--mem"]),
        ("exclude", None, ["-x"])]
    assert overridden(("-N", "2", "--time=5")) == {"nodes", "time"}


def test_slurm_flags_as_given_and_what_the_runner_reads():
    flags = slurm_flags(["-N", "2", "--gpus-per-node=8", "-o", "out.log", "--label", "-p", "gpu"], "srun")
    assert (flags.nodes, flags.gpus_per_node, flags.output, flags.launcher) == (2, 8, "out.log", "srun")
    assert flags.args == ("-N", "2", "--gpus-per-node=8", "-o", "out.log", "-p", "gpu")
    assert flags.srun_args == ("--label",)  # srun's own: on the step's srun line


@pytest.mark.parametrize(("tokens", "launcher", "message"), [
    (["--export=ALL"], "srun", "slurm flag '--export=ALL': Slurm flags are one line each and never set --export"),
    (["-p", "debug\n#SBATCH --x"], "srun", "Slurm flags are one line each"),
    (["--wrap", "x"], "srun", "slurm --wrap is refused: the runner's batch script is what runs on the nodes"),
    (["--get-user-env"], "srun", "slurm --get-user-env is refused"),
    (["--label"], "sbatch", "--label: srun options, but this is slurm sbatch"),
    (["p"], "srun", "slurm: 'p' is not a Slurm flag (the Primus args go after --)"),
])
def test_a_slurm_flag_that_would_widen_the_env_or_replace_the_script_is_refused(tokens, launcher, message):
    with pytest.raises(UsageError) as err:
        slurm_flags(tokens, launcher)
    assert message in err.value.message


def test_a_slurm_value_is_checked_as_submits_and_named_by_the_flag_as_given():
    with pytest.raises(ConfigError) as err:
        slurm_flags(["-N", "zero"], "srun")
    assert str(err.value.problems[0]).startswith("-N zero: the runner needs a node count")


def test_mode_options_of_each_mode():
    container = mode_options(parse("container", ["--image", "i", "--gpus", "0", "--dry-run", "--", "train"]), Sources(), False, False)
    assert (container.mode, container.primus_args, container.flags.image, container.gpus, container.dry_run) == (
        "container", ("train",), "i", "0", True)
    # direct's --dry-run is the direct launcher's own (it prints and runs nothing): the runner still runs it
    direct = mode_options(parse("direct", ["--dry-run", "--env", "A=1", "--", "x"]), Sources(), False, True)
    assert (direct.dry_run, direct.debug, direct.flags.env, direct.direct_args) == (False, True, ("A=1",), ("--dry-run",))
    slurm = mode_options(parse("slurm", ["sbatch", "-N", "3", "--", "direct", "--", "x"]), Sources(), True, False)
    [(engine, flags)] = slurm.engine_flags
    assert (slurm.dry_run, slurm.launcher, slurm.entry, engine, flags.nodes, flags.entry) == (True, "sbatch", "direct", "slurm", 3, "direct")
