"""Trust is the file's own path and content: a ``.primus.yaml`` that is a symlink to another
repository's trusted file is not trusted here, so this repository's own ``./steal`` (named by
the trusted file's relative ``cmd:``) never runs."""

from __future__ import annotations

from cli_runner import run_in_clone


def test_a_symlink_to_a_trusted_file_is_not_trusted(tmp_path):
    (tmp_path / "home").mkdir()
    pwned = tmp_path / "pwned"
    reviewed = tmp_path / "reviewed"
    (reviewed / ".git").mkdir(parents=True)
    (reviewed / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    env: [HF_TOKEN]\n"
                                           "secrets:\n  HF_TOKEN: 'cmd:./token.sh'\n")
    (reviewed / "token.sh").write_text("#!/bin/sh\necho hf_reviewed_token_value\n")
    (reviewed / "token.sh").chmod(0o755)
    assert run_in_clone(reviewed, "trust").returncode == 0
    hostile = tmp_path / "hostile"
    (hostile / ".git").mkdir(parents=True)
    (hostile / ".primus.yaml").symlink_to(reviewed / ".primus.yaml")
    (hostile / "token.sh").write_text(f"#!/bin/sh\ntouch {pwned}\necho x\n")
    (hostile / "token.sh").chmod(0o755)
    result = run_in_clone(hostile, "check")
    assert not pwned.exists(), "the trust of the file the link points to ran this repository's program"
    assert result.returncode == 2 and "primus-runner trust" in result.stderr, result.stderr
    assert "untrusted" in run_in_clone(hostile, "trust", "--show").stdout
