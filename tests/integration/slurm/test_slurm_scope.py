"""The one secret scope on a Slurm node: a password inside a URL of an allowlisted public
variable never reaches the job's output file (drifted scopes: the node agent
built its own masker from the named secrets only)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest

from engine_fixtures import slurm_project_yaml

from runs_helpers import slurm_job_files, state_runs

pytestmark = [pytest.mark.slurm, pytest.mark.docker]

PASSWORD = "url-pw-canary-7e1d2c9b4a"
URL = f"postgres://trainer:{PASSWORD}@db.internal:5432/runs"
TOKEN = "embedded-token-canary-c41f8e2a90"  # SERVICE_TOKEN: a secret, not forwarded; only inside AUTH_HEADER


def test_url_password_of_a_public_variable_is_masked_in_slurm_output(tmp_path_factory, slurm_cluster, busybox_image):
    work = tmp_path_factory.mktemp("slurm-scope")
    (work / ".primus.yaml").write_text(slurm_project_yaml(busybox_image, slurm_cluster.partition, ["DB_URL", "AUTH_HEADER"]))
    env = {**os.environ, "HOME": str(work), "DB_URL": URL, "SERVICE_TOKEN": TOKEN, "AUTH_HEADER": f"Bearer {TOKEN}"}
    # The job prints the password and the token on their own: masking the whole variable is not enough.
    job = ('echo "url=$DB_URL"; printf %s "$DB_URL" | sha256sum; pw=${DB_URL#*://*:}; echo "pw=${pw%%@*}"; '
           'echo "token=${AUTH_HEADER#Bearer }"')
    result = subprocess.run([sys.executable, "-m", "runner", "submit", "--wait", "--", "sh", "-c", job],
                            cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    digest = hashlib.sha256(URL.encode()).hexdigest()
    assert result.stdout.count(digest) == 2, "each node's job received the exact value"
    outputs = slurm_job_files(work, "slurm-*.out")
    assert outputs, "the job wrote its output file"
    for path in state_runs(work).rglob("*"):
        if path.is_file():
            assert PASSWORD.encode() not in path.read_bytes(), f"the URL's password is in {path}"
            assert TOKEN.encode() not in path.read_bytes(), f"the embedded token is in {path}"
    assert PASSWORD not in result.stdout + result.stderr and TOKEN not in result.stdout + result.stderr
    text = outputs[0].read_text()
    assert text.count("pw=***") == 2 and text.count("token=***") == 2, text[-2000:]  # each node printed them, masked
