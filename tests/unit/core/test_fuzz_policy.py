"""Property: the env-policy resolver never forwards what it must not, and never shows a secret.

Random host environments, env files, allowlists, prefixes, deny lists and
secret patterns over the built-in defaults. For every outcome:
- a name classified as secret is never forwarded by a prefix rule;
- a denied name is never forwarded;
- every forwarded secret's value is a ``Secret``, never a ``str``;
- no secret's value (nor its JSON-escaped form) is in ``plan.to_dict()``'s JSON;
- a forwarded non-secret allowlisted name carries the host's value exactly.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.config import Config, _merge
from runner.config.envfile import EnvFile
from runner.plan import LaunchFlags, build_plan
from runner.policy import NAME_RE, Classifier
from runner.resources import policies_dir
from runner.secrets import Secret
from runner.config.yamlsource import load_yaml

DEFAULTS = load_yaml(policies_dir() / "defaults.yaml").data

PREFIXES = ["PRIMUS_", "NCCL_", "RCCL_", "MY_", "APP"]  # 3+ characters: shorter ones are refused
NAME = st.one_of(
    st.from_regex(r"[A-Z_][A-Z0-9_]{0,10}", fullmatch=True),
    st.builds(lambda p, s: p + s, st.sampled_from(PREFIXES), st.sampled_from(["X", "TOKEN", "API_KEY", "SECRET_Y", "PASSWORD", "LEVEL", "A_TOKEN"])),
    st.sampled_from(["HF_TOKEN", "WANDB_API_KEY", "LD_PRELOAD", "HOME", "PATH", "DOCKER_HOST", "PRIMUS_LD_PRELOAD"]),
)
ODD_NAME = st.text(st.sampled_from("ab-1 .=$Z_"), min_size=1, max_size=6)  # not identifiers: prefix rules must skip them
VALUE = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=24)
PATTERN = st.one_of(NAME, st.builds(lambda s: "*" + s, st.sampled_from(["_X", "TOKEN", "KEY*", "_LEVEL", "Y"])))


def config_with(prefixes, deny, secrets, allow) -> Config:
    layer = {
        "container": {"gpu": "none", "options": {"image": "x", "env": allow}},
        "passthrough": {"prefixes": prefixes, "deny": deny, "secrets": secrets},
    }
    return Config(data=_merge(DEFAULTS, layer, (), {}, {}))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    host=st.dictionaries(st.one_of(NAME, ODD_NAME), VALUE, max_size=10),
    env_file=st.dictionaries(NAME, VALUE, max_size=4),
    allow=st.lists(NAME, max_size=5),
    cli=st.lists(NAME, max_size=2),
    prefixes=st.lists(st.sampled_from(PREFIXES), max_size=3),
    deny=st.lists(NAME, max_size=3),
    secrets=st.lists(PATTERN, max_size=3),
    uniq=st.uuids(),
)
def test_policy_never_forwards_or_shows_what_it_must_not(host, env_file, allow, cli, prefixes, deny, secrets, uniq):
    config = config_with(prefixes, deny, secrets, allow)
    classifier = Classifier.from_config(config)
    # Secret values get a unique suffix so "not in the JSON" is meaningful (a 1-char value is everywhere).
    for source in (host, env_file):
        for name in source:
            if classifier.is_secret(name):
                source[name] = f"{source[name]}~{uniq.hex}"
    planned = build_plan(config, ["true"], host, EnvFile(".env", dict(env_file)), LaunchFlags(env=tuple(cli)))
    plan = planned.plan
    assert plan is not None
    for d in plan.job.forwarded:
        assert not classifier.is_denied(d.name), f"denied {d.name} forwarded"
        assert NAME_RE.match(d.name)
        if classifier.is_secret(d.name):
            assert d.secret and isinstance(d.value, Secret), f"secret {d.name} forwarded as plain text"
            assert not d.reason.startswith("prefix"), f"secret {d.name} forwarded by a prefix"
        elif d.secret:  # a public name whose value holds a secret (a line of one, a URL's password) is carried as one
            assert isinstance(d.value, Secret) and planned.scope.masker.contains_secret(d.value.reveal().encode()), d.name
        else:
            assert isinstance(d.value, str)
            if d.reason == "allowlist" and d.source == "env":
                assert d.value == host[d.name]
    dumped = json.dumps(plan.to_dict())
    for source in (host, env_file):
        for name, value in source.items():
            if classifier.is_secret(name):
                assert value not in dumped and json.dumps(value)[1:-1] not in dumped, f"value of {name} in plan JSON"
    scope = {s.reveal() for s in planned.scope.values()}
    for name, value in list(host.items()) + list(env_file.items()):
        if classifier.is_secret(name) and value:
            assert value in scope, f"{name} is not masked"
