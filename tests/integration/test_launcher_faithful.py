"""The launcher's invocations do what the launcher does with them, against the Primus stand-in.

The stand-in (tests/fixtures/primus-standin) prints every argument it receives and what
Primus's parser would end with for the tracker switches (the experiment YAML, then the
overrides after it). Container forms run on Docker; see also test_launcher_modes.py.
"""

from __future__ import annotations

import json

import pytest

from test_launcher_modes import TRAIN, Space, seen, space, standin_image  # noqa: F401 - fixtures

pytestmark = [pytest.mark.docker]


def effective(output: str) -> dict[str, str]:
    found = {}
    for line in output.splitlines():
        if line.startswith("standin-effective: "):
            key, _, value = line[len("standin-effective: "):].partition("=")
            found[key] = value
    return found


def test_experiment_that_enables_wandb_keeps_it_without_tracker_settings(space: Space):
    """No trackers: in .primus.yaml: the experiment's own `disable_wandb: false` is what Primus ends with
    (the runner used to append --disable_wandb=true and three more built-in defaults)."""
    (space.checkout / "exp.yaml").write_text("modules:\n  pre_trainer:\n    overrides:\n      disable_wandb: false\n"
                                             "      enable_one_logger: false\n")
    result = space.run("container", "--", "train", "pretrain", "--config", "exp.yaml", env={"PRIMUS_PATH": str(space.checkout)})
    assert result.returncode == 0, result.stderr
    (got,) = seen(result.stdout).values()
    assert got["args"] == ["train", "pretrain", "--config", "exp.yaml"]  # nothing appended
    assert effective(result.stdout) == {"disable_tensorboard": "unset", "disable_wandb": "false", "disable_mlflow": "unset",
                                        "enable_one_logger": "false"}


def test_a_tracker_key_in_the_config_file_is_appended_and_wins(space: Space):
    (space.checkout / "exp.yaml").write_text("disable_wandb: false\n")
    space.config.write_text(space.config.read_text() + "trackers:\n  disable_wandb: true\n")
    result = space.run("container", "--", "train", "pretrain", "--config", "exp.yaml", env={"PRIMUS_PATH": str(space.checkout)})
    assert result.returncode == 0, result.stderr
    (got,) = seen(result.stdout).values()
    assert got["args"][4:] == ["--disable_wandb=true"]
    assert effective(result.stdout)["disable_wandb"] == "true"
    plan = space.run("--json", "plan", "--", "train", "pretrain", "--config", "exp.yaml", env={"PRIMUS_PATH": str(space.checkout)})
    sources = json.loads(plan.stdout)["trackers"]["override_sources"]
    line = next(n for n, text in enumerate(space.config.read_text().splitlines(), 1) if "disable_wandb" in text)
    assert sources == [{"override": "--disable_wandb=true", "from": f"{space.config}:{line}"}]


def test_a_second_mount_of_the_checkout_keeps_its_own_mount(space: Space):
    """`container --volume <checkout>:/data -- train …` inside a checkout: the checkout stays mounted at its
    own path (the job found no runner/primus-cli-direct.sh when /data replaced it) and /data is there too."""
    checkout = str(space.checkout)
    plan = space.run("--json", "container", "--dry-run", "--volume", f"{checkout}:/data", "--", *TRAIN, env={"PRIMUS_PATH": str(space.checkout)})
    assert plan.returncode == 0, plan.stderr
    mounts = {(m["source"], m["target"]) for m in json.loads(plan.stdout)["mounts"]}
    assert {(checkout, "/data"), (checkout, checkout)} <= mounts
    # the entry checks /data first, then runs the checkout's direct launcher as the default entry does
    entry = space.root / "entry.yaml"
    entry.write_text("container:\n  entry: [sh, -c, 'test -f /data/runner/primus-cli-direct.sh && exec bash "
                     "runner/primus-cli-direct.sh \"$@\"', sh]\n")
    result = space.run("--config", str(entry), "container", "--volume", f"{checkout}:/data", "--", *TRAIN, env={"PRIMUS_PATH": str(space.checkout)})
    assert result.returncode == 0, result.stderr
    (got,) = seen(result.stdout).values()
    assert got["path"] == "runner/primus-cli-direct.sh" and got["pwd"] == checkout
