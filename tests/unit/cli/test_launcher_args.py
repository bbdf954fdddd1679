"""The launcher's modes read token by token as the Primus launcher reads them (``runner.cli.launcher_args``):
argv → ``ModeArgs``, each error with its message and, through the CLI, exit 2 in one line and its fix."""

from __future__ import annotations

import pytest

from runner.cli.launcher_args import default_launcher, parse, split_mode
from runner.errors import UsageError

TRAIN = ["train", "pretrain", "--config", "exp.yaml"]
FIELDS = ("globals", "dry_run", "debug", "clean", "options", "env", "direct_args", "primus_args", "launcher", "slurm_args", "entry")


def _fields(args) -> dict:
    """The fields a case names, the others at their default."""
    return {key: getattr(args, key) for key in FIELDS}


def _expected(**given) -> dict:
    base = {"globals": {}, "dry_run": False, "debug": False, "clean": False, "options": [], "env": [], "direct_args": [],
            "primus_args": [], "launcher": "srun", "slurm_args": [], "entry": "container"}
    return {**base, **given}


@pytest.mark.parametrize(("mode", "tokens", "expected"), [
    # container: a value is the next token unless it starts with --; a boolean docker option takes none
    ("container", ["--image", "x", "-v", "/a:/b", "--privileged", "--gpus", "0", "--", *TRAIN],
     _expected(options=[("image", "x"), ("volume", "/a:/b"), ("privileged", None), ("gpus", "0")], primus_args=TRAIN)),
    # the first word that is no option starts the Primus args (no -- needed); the runner's globals are taken
    ("container", ["--json", "--dry-run", "--clean", "train", "--x"],
     _expected(globals={"json": True}, dry_run=True, clean=True, primus_args=["train", "--x"])),
    ("container", ["-vX:/y", "--shm-size=8g", "train"], _expected(options=[("volume", "X:/y"), ("shm-size", "8g")], primus_args=["train"])),
    # after --: the direct launcher's options up to its own --; --env NAME=VALUE goes through the env policy
    ("container", ["--", "--log_file", "/t.log", "--env", "K=V", "--", *TRAIN],
     _expected(env=["K=V"], direct_args=["--log_file", "/t.log"], primus_args=TRAIN)),
    # the Primus docs' direct options given to container mean the direct launcher's
    ("container", ["--log_file", "/t.log", "--single", "train"], _expected(direct_args=["--log_file", "/t.log", "--single"], primus_args=["train"])),
    ("container", ["--debug", "false", "train"], _expected(primus_args=["train"])),
    # direct: --env NAME[=VALUE] under the policy, --config the runner's, --debug PRIMUS_LOG_LEVEL; the rest unchanged
    ("direct", ["--env", "A=1", "--single", "--debug", "--config", "c.yaml", "--", "train"],
     _expected(globals={"config": "c.yaml"}, debug=True, env=["A=1"], direct_args=["--single"], primus_args=["train"])),
    ("direct", ["--env", "./f.env", "--silent", "train", "x"], _expected(direct_args=["--env", "./f.env", "--silent"], primus_args=["train", "x"])),
    ("direct", ["--dry-run", "--", "x"], _expected(dry_run=True, direct_args=["--dry-run"], primus_args=["x"])),
    # slurm: every flag before -- is Slurm's as given; the first srun|sbatch (before any flag) is the launcher
    ("slurm", ["sbatch", "-N", "2", "--dry-run", "--", "direct", "--numa", "--", "x"],
     _expected(dry_run=True, direct_args=["--numa"], primus_args=["x"], launcher="sbatch", slurm_args=["-N", "2"], entry="direct")),
    ("slurm", ["-N", "2", "srun", "--", "x"], _expected(slurm_args=["-N", "2", "srun"], primus_args=["x"])),
    ("slurm", ["--", "container", "--image", "i", "--dry-run", "--", "x"],
     _expected(dry_run=True, options=[("image", "i")], primus_args=["x"])),
])
def test_tokens_to_mode_args(mode, tokens, expected):
    assert _fields(parse(mode, tokens)) == expected


@pytest.mark.parametrize(("mode", "tokens", "message", "hint"), [
    ("container", ["-Z", "x"], "-Z: not a docker run option the runner knows", "use the long form, e.g. --volume"),
    ("container", ["--env"], "--env needs a value", "--env VALUE"),
    ("container", ["--config"], "--config needs a value", "--config FILE"),
    ("direct", ["--script"], "--script needs a value", "--script VALUE"),
    ("slurm", ["-N", "2"], "slurm needs -- and then the Primus args (or an entry: container|direct … --)",
     "primus-runner slurm srun -N 2 -- train pretrain --config exp.yaml"),
    ("slurm", ["--", "container", "--clean", "--", "x"], "--clean is not for Slurm jobs (it would remove containers on the submitting host)",
     "run primus-runner down --all on the nodes, or cancel the job"),
])
def test_what_the_launcher_cannot_take_is_a_usage_error(mode, tokens, message, hint):
    with pytest.raises(UsageError) as err:
        parse(mode, tokens)
    assert (err.value.message, err.value.hint) == (message, hint)


@pytest.mark.parametrize(("argv", "message"), [
    (["container", "-Z", "x"], "error: -Z: not a docker run option the runner knows (fix: use the long form, e.g. --volume)"),
    (["slurm", "-N", "2"], "error: slurm needs -- and then the Primus args"),
])
def test_through_the_cli_an_error_is_exit_2_in_one_line(cli, argv, message):
    rc, out, err = cli(*argv)
    assert rc == 2 and err.startswith(message) and "Traceback" not in err, err


@pytest.mark.parametrize(("argv", "expected"), [
    (["--json", "container", "--image", "x", "--", "a"], (["--json"], "container", ["--image", "x", "--", "a"])),
    (["--config", "f.yaml", "direct", "x"], (["--config", "f.yaml"], "direct", ["x"])),
    (["container", "--", "--help"], ([], "container", ["--", "--help"])),  # after --: Primus's own --help
    (["container", "--help"], None),  # the mode's help: argparse answers
    (["up", "--", "x"], None),
    ([], None),
])
def test_split_mode(argv, expected):
    assert split_mode(argv) == expected


def test_slurm_entry_split():
    """What follows slurm's first --: an entry (container|direct) or, as the launcher routes it, the container entry."""
    def split(tokens):
        got = parse("slurm", ["-N", "2", "--", *tokens])
        return got.entry, got.options, got.primus_args
    assert split(TRAIN) == ("container", [], TRAIN)
    assert split(["preflight", "--quick"]) == ("container", [], ["preflight", "--quick"])
    assert split(["container", "--image", "x", "--", *TRAIN]) == ("container", [("image", "x")], TRAIN)
    assert split(["direct", "--", *TRAIN]) == ("direct", [], TRAIN)


@pytest.mark.parametrize("argv, expected", [
    (["slurm", "-N", "2", "--", "x"], ["slurm", "srun", "-N", "2", "--", "x"]),
    (["--dry-run", "slurm", "--", "x"], ["--dry-run", "slurm", "srun", "--", "x"]),
    (["--config", "f.yaml", "slurm", "sbatch", "--", "x"], ["--config", "f.yaml", "slurm", "sbatch", "--", "x"]),
    (["slurm", "--json", "sbatch", "--", "x"], ["slurm", "--json", "sbatch", "--", "x"]),
    (["slurm", "--help"], ["slurm", "--help"]),
    (["slurm", "--config", "f.yaml", "--debug", "-N", "2", "--", "x"], ["slurm", "srun", "--config", "f.yaml", "--debug", "-N", "2", "--", "x"]),
    (["slurm", "--dry-run", "sbatch", "--", "x"], ["slurm", "--dry-run", "sbatch", "--", "x"]),
    (["up", "--", "slurm"], ["up", "--", "slurm"]),
])
def test_slurm_defaults_to_srun(argv, expected):
    assert default_launcher(argv) == expected
