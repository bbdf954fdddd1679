"""Planning (`build_plan`), its secret scope: a public variable whose value holds a secret is carried as a secret
(through the stdin shim, masked), never as a public value of the container."""

from __future__ import annotations

from plan_factory import plan_from
from secret_ref_helpers import canary

from runner.secrets import Secret


def test_a_public_variable_holding_a_secret_travels_as_one(work):
    token = canary("embedded")
    host = {"SERVICE_TOKEN": token, "AUTH_HEADER": f"Bearer {token}", "PLAIN": "public"}
    planned = plan_from(work, "container:\n  options:\n    image: busybox\n    env: [AUTH_HEADER, PLAIN]\n", host=host,
                        flags=["--gpu", "none"], name="j")
    forwarded = {d.name: d for d in planned.require().job.forwarded}
    assert forwarded["AUTH_HEADER"].secret and isinstance(forwarded["AUTH_HEADER"].value, Secret)
    assert forwarded["AUTH_HEADER"].value.reveal() == host["AUTH_HEADER"]
    assert not forwarded["PLAIN"].secret and forwarded["PLAIN"].value == "public"  # the rest stays public
    assert "SERVICE_TOKEN" not in forwarded  # its value travels inside AUTH_HEADER alone
