"""Property: the config loader and planner either succeed or raise the documented ConfigError.

Random documents (structured ones built from the schema's own key names, so
the fuzzer reaches deep validation, and raw text, so it reaches the parser)
are written to a file and loaded as a ``--config`` layer. Nothing else may
escape: no KeyError, TypeError, RecursionError or YAML exception.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.config import Config, load_config
from runner.config.envfile import EnvFile
from runner.errors import ConfigError
from runner.plan import LaunchFlags, Planned, build_plan
from runner.resources import policies_dir

SCHEMA = json.loads((policies_dir() / "config.schema.json").read_text())


def _schema_keys(node, out: set[str]) -> set[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                out.update(value)
            _schema_keys(value, out)
    elif isinstance(node, list):
        for item in node:
            _schema_keys(item, out)
    return out


KEYS = sorted(_schema_keys(SCHEMA, set()))
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=True), TEXT,
    st.sampled_from(["rocm", "cuda", "none", "megatron", "torchtitan", "HF_TOKEN", "PRIMUS_X=1", "WANDB_API_KEY=x",
                     "/dev/kfd", "/tmp:/x:ro", "1BAD", "*_TOKEN", "true", "1.5", "8g", "host", "stdin", "env"]),
)
KEY = st.one_of(st.sampled_from(KEYS), TEXT)
DOCS = st.recursive(
    SCALARS,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(KEY, children, max_size=5)),
    max_leaves=12,
)
# Documents shaped like real configs: the top-level sections with random content.
SHAPED = st.fixed_dictionaries(
    {},
    optional={
        "main": st.dictionaries(KEY, DOCS, max_size=3),
        "container": st.fixed_dictionaries(
            {}, optional={"gpu": SCALARS, "secrets_via": SCALARS, "stop_timeout": SCALARS,
                          "options": st.dictionaries(st.sampled_from(KEYS), DOCS, max_size=6)}),
        "passthrough": st.dictionaries(st.sampled_from(["prefixes", "deny", "secrets", "required"]), st.lists(SCALARS, max_size=4)),
        "trackers": st.dictionaries(st.sampled_from(KEYS), DOCS, max_size=5),
        "slurm": st.dictionaries(st.sampled_from(KEYS), SCALARS, max_size=4),
    },
)
YAMLISH = st.lists(
    st.sampled_from(list("abc:-[]{}&*!|>'\"#%@`\n\t ,?0129.\\") + ["\u00e9", "<<: *a", "!!python/object:os.system", "&a ", "*a", "\n  - ", "container:", "options:", "env:"]),
    max_size=60,
).map("".join)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    """An empty HOME and project dir, and a private schema cache, for the whole module."""
    root = tmp_path_factory.mktemp("fuzz-config")
    saved = {k: os.environ.get(k) for k in ("HOME", "XDG_CACHE_HOME")}
    os.environ.update(HOME=str(root), XDG_CACHE_HOME=str(root / "cache"))
    yield root
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def load_and_plan(root: Path, text: str) -> None:
    path = root / "layer.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    try:
        config = load_config(str(path), project_dir=root / "no-project")
    except ConfigError as exc:
        assert exc.problems and all(p.message for p in exc.problems)
        return
    assert isinstance(config, Config)
    try:
        planned = build_plan(config, ["true"], {}, EnvFile(None), LaunchFlags())
    except ConfigError:
        return
    assert isinstance(planned, Planned)
    if not planned.problems:
        json.dumps(planned.require().to_dict())  # a valid plan always renders




def fuzz(n: int) -> settings:
    return settings(max_examples=n, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@fuzz(300)
@given(doc=st.one_of(DOCS, SHAPED))
def test_random_documents_load_or_raise_config_error(sandbox, doc):
    load_and_plan(sandbox, yaml.safe_dump(doc, allow_unicode=True))


@fuzz(500)
@given(text=YAMLISH)
def test_random_yaml_text_loads_or_raises_config_error(sandbox, text):
    load_and_plan(sandbox, text)


@fuzz(200)
@given(options=st.dictionaries(st.sampled_from(KEYS), SCALARS, max_size=8), gpu=st.sampled_from(["rocm", "cuda", "none"]))
def test_random_container_options_load_or_raise_config_error(sandbox, options, gpu):
    load_and_plan(sandbox, yaml.safe_dump({"container": {"gpu": gpu, "options": options}}, allow_unicode=True))
