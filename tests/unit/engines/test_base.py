"""The engine base class carries every optional fact's default once: nothing outside it asks an
engine with ``getattr(engine, NAME, default)``, and an engine that states nothing has the defaults."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import runner
from runner.engines.base import EngineBase, Launched

ROOT = Path(runner.__file__).parent
FACTS = ("audit_after", "computed_env", "launch_options", "gpu_mode", "local_images", "dry_run_lists_unset",
         "runs_in_container", "runs_on_nodes", "job_dir_setting", "claim", "job_dir", "job_dir_unseen", "record_started",
         "record_ended", "record_logs", "check_engine", "options", "cli_flags")


def test_an_engine_that_states_nothing_has_the_defaults():
    class Bare(EngineBase):
        name = "bare"

    bare = Bare()
    assert (bare.gpu_mode, bare.runs_in_container, bare.runs_on_nodes, bare.local_images) == ("off", True, False, False)
    assert bare.launch_options == () and bare.job_dir_setting is None
    assert bare.claim("plan", None) == "plan" and bare.job_dir(None, "r", "n") is None and bare.check_engine(None) is None
    assert bare.record_started(Launched("42", "n"), None) == {"job_id": "42"}
    assert bare.record_ended({}) is None and bare.record_logs({}, None, follow=False, tail=None, node=None) is None
    assert bare.options() == () and bare.cli_flags({}, "up") is None


def test_every_registered_engine_is_built_on_the_base():
    from runner.engines import ENGINES, engine_for

    assert all(isinstance(engine_for(name), EngineBase) for name in ENGINES)


def test_no_module_probes_an_engine_fact_with_a_default():
    engine = r"(\w*engine\w*|self|eng|engine_for\([^)]*\))"  # what holds an engine where it is asked
    probe = re.compile(r"getattr\(\s*" + engine + r"\s*,\s*[\"'](" + "|".join(FACTS + ("cli_options",)) + r")[\"']")
    found = [f"{path.relative_to(ROOT.parent)}:{n}" for path in ROOT.rglob("*.py")
             for n, line in enumerate(path.read_text().splitlines(), 1) if probe.search(line)]
    assert found == []


class _NoContainer(EngineBase):
    name = "bare"
    runs_in_container = False


class _NoGpus(EngineBase):
    name = "nogpu"
    gpu_mode = "off"


@pytest.mark.parametrize("engine, flags, message", [
    (_NoContainer(), {"memory": "4g"}, "the bare engine cannot honour --memory: it would run the job without it"),
    (_NoContainer(), {"image": "img:1", "shm_size": "1g"}, "the bare engine cannot honour --image, --shm-size: it would run the job without them"),
    (_NoGpus(), {"gpus": "0,1"}, "the nogpu engine cannot honour --gpus: it would run the job without it"),
    (_NoGpus(), {"memory": "4g"}, None),  # it runs a container: the field is carried
    (_NoContainer(), {"name": "j"}, None),  # the job's own field, not the container's
])
def test_a_launch_flag_the_engine_cannot_carry_out_is_one_usage_error(engine, flags, message):
    from runner.errors import UsageError
    from runner.options import LaunchFlags

    if message is None:
        engine.refuse_unhonoured(LaunchFlags(**flags))
        return
    with pytest.raises(UsageError) as info:
        engine.refuse_unhonoured(LaunchFlags(**flags))
    assert info.value.message == message and info.value.exit_code == 2
    assert info.value.hint.endswith("or launch with --engine docker")
