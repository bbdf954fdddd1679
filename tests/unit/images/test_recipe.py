"""A build recipe resolved: the host's pip settings a build may use (never a password), build args,
and the secrets a build mounts, all missing ones reported at once."""

from __future__ import annotations

import os

import pytest

from runner.errors import UsageError
from runner.images import recipe as build_recipe


def test_pip_ca_precedence(tmp_path):
    a, b = tmp_path / "a.crt", tmp_path / "b.crt"
    a.write_text("a")
    b.write_text("b")
    assert build_recipe.host_pip_settings({"PIP_CERT": str(a), "SSL_CERT_FILE": str(b)}, home=tmp_path)[1] == str(a)
    no_config = {"PIP_CONFIG_FILE": os.devnull}
    assert build_recipe.host_pip_settings({**no_config, "SSL_CERT_FILE": str(b), "PIP_CERT": str(tmp_path / "missing")}, home=tmp_path)[1] == str(b)
    conf = tmp_path / "pip.conf"
    conf.write_text(f"[global]\ncert = {b}\n")
    # pip's own `cert` setting beats REQUESTS_CA_BUNDLE, as it does for pip
    assert build_recipe.host_pip_settings({"PIP_CONFIG_FILE": str(conf), "REQUESTS_CA_BUNDLE": str(a), "XDG_CONFIG_DIRS": str(tmp_path / "none")}, home=tmp_path)[1] == str(b)


def test_host_pip_config_is_forwarded_when_usable_in_a_build(tmp_path):
    xdg = tmp_path / "xdg"
    (xdg / "pip").mkdir(parents=True)
    (xdg / "pip" / "pip.conf").write_text("[global]\nconstraint = /etc/xdg/pip/constraints.txt\nindex-url = https://mirror.example.com/simple\n")
    (tmp_path / ".config" / "pip").mkdir(parents=True)
    (tmp_path / ".config" / "pip" / "pip.conf").write_text(
        "[global]\nfind-links = /opt/wheels\nextra-index-url = file:///opt/pypi/simple https://extra.example.com/simple\ntrusted-host = mirror.example.com\n"
    )
    env = {"XDG_CONFIG_DIRS": str(xdg), "PIP_DEFAULT_TIMEOUT": "180", "HTTPS_PROXY": "http://proxy.example.com:3128"}
    args, _, notes = build_recipe.host_pip_settings(env, home=tmp_path)
    assert args["PIP_INDEX_URL"] == "https://mirror.example.com/simple"
    assert args["PIP_EXTRA_INDEX_URL"] == "https://extra.example.com/simple"  # the host-local file:// index is dropped
    assert args["PIP_TRUSTED_HOST"] == "mirror.example.com"
    assert args["PIP_DEFAULT_TIMEOUT"] == "180"
    assert args["HTTPS_PROXY"] == "http://proxy.example.com:3128"
    assert "PIP_FIND_LINKS" not in args and not any("constraint" in k.lower() for k in args)
    assert any("host-local" in n for n in notes)


def test_host_index_with_password_is_not_forwarded(tmp_path):
    args, _, notes = build_recipe.host_pip_settings({"PIP_INDEX_URL": "https://u:hunter2-pw@private.example.com/simple"}, home=tmp_path)
    assert "PIP_INDEX_URL" not in args
    assert any("embeds a password" in n for n in notes) and not any("hunter2" in n for n in notes)


def test_bare_build_arg_takes_the_host_value():
    assert build_recipe.parse_build_args(["A=1", "B"], {"B": "2"}) == [("A", "1"), ("B", "2")]
    with pytest.raises(UsageError):
        build_recipe.parse_build_args(["C"], {})
    with pytest.raises(UsageError):
        build_recipe.parse_build_args(["=x"], {})


def test_secret_names_from_flags_and_config_and_all_missing_at_once():
    from runner.config import Config
    from runner.errors import ConfigError
    from runner.options import BuildOptions

    config = Config({"images": {"secrets": ["PIP_INDEX_URL", "HF_TOKEN"]}})
    names = build_recipe.secret_names(BuildOptions(secrets=("HF_TOKEN", "GH_TOKEN")), config)
    assert names == ("HF_TOKEN", "GH_TOKEN", "PIP_INDEX_URL")
    with pytest.raises(UsageError):
        build_recipe.secret_names(BuildOptions(secrets=("id=x,src=/etc/passwd",)), None)
    found = build_recipe.secret_values(["HF_TOKEN"], {"HF_TOKEN": "from-env"}, {"HF_TOKEN": "from-file"})
    assert [(n, v.reveal()) for n, v in found] == [("HF_TOKEN", "from-env")]  # the environment first, like every secret
    assert build_recipe.secret_values(["GH_TOKEN"], {}, {"GH_TOKEN": "from-file"})[0][1].reveal() == "from-file"
    with pytest.raises(ConfigError) as missing:
        build_recipe.secret_values(["A_ONE", "HF_TOKEN", "B_TWO"], {"HF_TOKEN": "x"}, {})
    assert missing.value.exit_code == 2 and [p.message.split()[2] for p in missing.value.problems] == ["A_ONE", "B_TWO"]


def test_a_users_dockerfile_reads_pips_config_only_when_it_takes_a_pip_setting(tmp_path, monkeypatch):
    from runner.config import Config
    from runner.config.envfile import EnvFile
    from runner.context import Context
    from runner.options import BuildOptions
    from runner.secrets import SecretScope

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nindex-url = https://mirror.example.com/simple\nextra-index-url = file:///opt/pypi/simple\n")
    host_env = {"PIP_CONFIG_FILE": str(conf), "XDG_CONFIG_DIRS": str(tmp_path / "none"), "XDG_CONFIG_HOME": str(tmp_path / "none")}
    (tmp_path / "ctx").mkdir()
    context = Context(Config({}), EnvFile(None), SecretScope())

    def resolved(dockerfile: str):
        (tmp_path / "ctx" / "Dockerfile").write_text(dockerfile)
        return build_recipe.resolve_build(BuildOptions(file=str(tmp_path / "ctx" / "Dockerfile")), context, host_env=host_env)

    plain = resolved("FROM scratch\nCOPY Dockerfile /\n")
    assert "PIP_INDEX_URL" not in dict(plain.build_args) and not any("pip" in note for note in plain.notes)
    takes_pip = resolved("FROM scratch\nARG PIP_INDEX_URL\nCOPY Dockerfile /\n")
    assert dict(takes_pip.build_args)["PIP_INDEX_URL"] == "https://mirror.example.com/simple"
    assert any("host-local" in note for note in takes_pip.notes)
