"""Tracker overrides round-trip through Primus's own parsing rule.

Primus reads the arguments after its training command with
``parse_cli_overrides(tokens, type_mode="legacy")``. The rule is re-implemented
here from the facts page (no Primus code vendored): forms ``key=value``,
``--key=value``, ``--key value``, ``nested.key=value``; ``true``/``false`` in any
case are booleans, every other value is ``eval``'d with empty globals and the
result used when that succeeds, the raw text otherwise.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.trackers.primus_overrides import NotRepresentable, is_primus_training, literal, render, wanted


def legacy_value(raw: str):
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    try:
        return eval(raw, {})  # noqa: S307 - Primus's own rule, on our own test values
    except Exception:
        return raw


def primus_parse(tokens: list[str]) -> dict:
    """``parse_cli_overrides(tokens, type_mode="legacy")`` as the facts page describes it."""
    result: dict = {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        body = token[2:] if token.startswith("--") else token
        if "=" in body:
            key, raw = body.split("=", 1)
            i += 1
        else:
            assert token.startswith("--"), token
            key, raw = body, tokens[i + 1]
            i += 2
        *parents, leaf = key.split(".")
        node = result
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = legacy_value(raw)
    return result


def same(a, b) -> bool:
    """Equal with the same types all the way down (1 == 1.0 == True is not enough)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def roundtrip(value):
    (token,) = render("k", value)
    return primus_parse([token])["k"]


# The values the issue names, and the ones that changed meaning before.
@pytest.mark.parametrize("value", [
    "2024", 2024, "1e-3", 1e-3, "None", None, "true", "False", True, False, "[1,2]", [1, 2], "llama3",
    "my run", "it's \"quoted\"", "a=b", "--not-a-flag", "-5", -5, "__import__('os').getpid()", "x\ny", "",
    "ünïcødé", [True, None, "a", 1.5], {"a": [1, {"b": "2"}]}, float("inf"), float("-inf"), float("nan"), 0, -0.0,
    "'already quoted'", "\\", "#", "${HOME}", "$(id)",
])
def test_each_value_arrives_as_configured(value):
    assert same(roundtrip(value), value), (value, render("k", value))


def test_before_the_fix_a_quoted_year_arrived_as_an_int():
    # What str(value) sent before: Primus got the int 2024 and evaluated code.
    assert legacy_value(str("2024")) == 2024
    assert legacy_value("__import__('os').getpid()") != "__import__('os').getpid()"
    assert roundtrip("2024") == "2024"


json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(json_like)
def test_any_yaml_value_round_trips(value):
    assert same(roundtrip(value), value)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.from_regex(r"[a-z_][a-z0-9_]{0,12}", fullmatch=True), json_like, max_size=6))
def test_a_whole_override_list_round_trips(settings_):
    tokens = [t for key, value in settings_.items() for t in render(key, value)]
    assert same(primus_parse(tokens), settings_)


def test_nested_keys_and_refused_values():
    assert primus_parse(render("metrics.enable_wandb", True)) == {"metrics": {"enable_wandb": True}}
    import datetime

    with pytest.raises(NotRepresentable):
        render("k", datetime.date(2024, 1, 1))
    with pytest.raises(NotRepresentable):
        render("bad key", 1)
    assert literal(True) == "true" and literal([True]) == "[True]"


def test_overrides_only_on_primus_training_commands_unless_configured():
    train = ["bash", "runner/primus-cli-direct.sh", "train", "pretrain", "--config", "exp.yaml"]
    assert is_primus_training(train) and is_primus_training(["primus-cli", "direct", "--", "train", "posttrain"])
    assert not is_primus_training(["python", "train.py"]) and not is_primus_training(["benchmark", "gemm", "-M", "4096"])
    assert wanted(None, train) and wanted("auto", train) and not wanted("auto", ["python", "train.py"])
    assert wanted("always", ["python", "train.py"]) and not wanted("never", train)


# ---------------------------------------------------------------- end to end, through plan

def _plan_command(tmp_path, trackers: str, command: list[str]) -> list[str]:
    import json
    import os
    import subprocess
    import sys

    (tmp_path / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    image: busybox\n" + trackers)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WANDB", "MLFLOW", "HF_"))}
    env.update(HOME=str(tmp_path), NO_COLOR="1", WANDB_MODE="offline")
    result = subprocess.run([sys.executable, "-P", "-m", "runner", "--json", "plan", "--", *command], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["command"]


TRAIN_CMD = ["primus-cli", "direct", "--", "train", "pretrain", "--config", "exp.yaml"]
TRACKERS = ("trackers:\n  disable_wandb: false\n  wandb_project: \"2024\"\n  wandb_exp_name: \"it's a \\\"run\\\" (1)\"\n"
            "  wandb_entity: \"__import__('os').getpid()\"\n")


def test_configured_values_arrive_in_primus_as_configured(tmp_path):
    command = _plan_command(tmp_path, TRACKERS, TRAIN_CMD)
    assert command[:len(TRAIN_CMD)] == TRAIN_CMD
    got = primus_parse(command[len(TRAIN_CMD):])
    assert same(got["wandb_project"], "2024") and same(got["disable_wandb"], False)
    assert got["wandb_exp_name"] == "it's a \"run\" (1)" and got["wandb_entity"] == "__import__('os').getpid()"
    assert "overrides" not in got


def test_overrides_never_and_always(tmp_path):
    assert _plan_command(tmp_path, TRACKERS + "  overrides: never\n", TRAIN_CMD) == TRAIN_CMD
    command = _plan_command(tmp_path, TRACKERS + "  overrides: always\n", ["python", "train.py"])
    assert same(primus_parse(command[2:])["wandb_project"], "2024")


def test_a_plain_command_gets_no_overrides_by_default(tmp_path):
    assert _plan_command(tmp_path, TRACKERS, ["python", "train.py"]) == ["python", "train.py"]
