"""``check_clean``: a container create body in which the masker finds a secret value is refused,
naming the variable and the fields, before the engine ever sees it (``docker inspect`` would show it)."""

from __future__ import annotations

import pytest

from secret_ref_helpers import canary

from runner.engines.docker.container import check_clean
from runner.errors import ConfigError
from runner.secrets import Secret, secret_scope

VALUE = canary("create-body")
MASKER = secret_scope(extra=[("HF_TOKEN", Secret(VALUE))]).masker
CLEAN = {"Image": "busybox", "Cmd": ["sh", "-c", 'echo "$HF_TOKEN"'], "Env": ["A=1"], "Labels": {"io.primus-runner.run": "r1"},
         "WorkingDir": "/w", "User": "1000", "HostConfig": {"Binds": ["/data:/data"]}}


def test_a_body_with_public_values_and_names_only_passes():
    check_clean(CLEAN, MASKER)


@pytest.mark.parametrize("field, value, place", [
    ("Cmd", ["python", "train.py", "--token", VALUE], "Cmd"),
    ("Env", [f"ALIAS={VALUE}"], "Env"),
    ("Labels", {"note": VALUE}, "Labels"),
    ("Entrypoint", [f"/bin/{VALUE}"], "Entrypoint"),
    ("HostConfig", {"Binds": [f"/data/{VALUE}:/data"]}, "HostConfig"),
])
def test_a_secret_value_in_any_field_is_refused_naming_the_variable_and_the_field(field, value, place):
    with pytest.raises(ConfigError) as refused:
        check_clean({**CLEAN, field: value}, MASKER)
    message = str(refused.value)
    assert "HF_TOKEN" in message and place in message and VALUE not in message
