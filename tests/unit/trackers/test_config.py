"""The ``trackers:`` section (runner.trackers.config): what each tracker needs, what the job sees, on real
config layers, and the decisions themselves on a merged config."""

from __future__ import annotations

from pathlib import Path

import pytest

from plan_factory import plan_from

from runner.config import Config, load_config
from runner.config.envfile import EnvFile
from runner.plan import LaunchFlags
from runner.secrets import Secret
from runner.trackers import TRACKERS
from runner.trackers.config import analyze_trackers, declared_settings, is_primus_training, job_lookup, literal_values
from runner.trackers.mlflow.settings import is_databricks_uri

CANARY = "canary-trackers-7f3e0a19c2"
TRAIN = ["primus-cli", "train", "pretrain", "--config", "exp.yaml"]


def plan_for(work: Path, trackers: str, host: dict | None = None, command=("true",), flags=LaunchFlags(gpu="none"), env_file=EnvFile(None)):
    config = "container:\n  options:\n    image: busybox\ntrackers:\n" + trackers
    return plan_from(work, config, command, host=host, flags=flags, env_file=env_file, name="job-1")


def messages(planned) -> str:
    return "\n".join(str(p) for p in planned.problems)


def env(planned) -> dict:
    return {d.name: d for d in planned.plan.job.forwarded}


def test_all_trackers_off_by_default_need_nothing(work):
    planned = plan_for(work, "  framework: megatron\n")
    assert not planned.problems
    assert planned.plan.job.trackers.enabled == ()
    assert not any(d.name.startswith(("WANDB_", "MLFLOW_")) and d.forwarded for d in planned.plan.job.env)


def test_every_missing_item_in_one_problem_list(work):
    """Databricks URI without host/token, W&B without a key, TensorBoard without a dir: all at once."""
    planned = plan_for(
        work,
        "  disable_tensorboard: false\n  disable_wandb: false\n  disable_mlflow: false\n",
        {"MLFLOW_TRACKING_URI": "databricks"},
    )
    text = messages(planned)
    for needed in ("tensorboard_dir", "WANDB_API_KEY", "DATABRICKS_HOST", "DATABRICKS_TOKEN"):
        assert needed in text
    assert "MLFLOW_TRACKING_URI (" not in text  # it is set
    with pytest.raises(Exception) as info:
        planned.require()
    assert getattr(info.value, "exit_code", None) == 2


def test_databricks_token_sign_in_needs_host_and_token(work):
    assert is_databricks_uri("databricks") and is_databricks_uri("databricks://p")
    planned = plan_for(work, "  disable_mlflow: false\n", {"MLFLOW_TRACKING_URI": "databricks"})
    assert "DATABRICKS_HOST" in messages(planned) and "DATABRICKS_TOKEN" in messages(planned)
    ok = plan_for(work, "  disable_mlflow: false\n", {"MLFLOW_TRACKING_URI": "databricks", "DATABRICKS_HOST": "https://x.cloud", "DATABRICKS_TOKEN": CANARY})
    assert not ok.problems
    forwarded = env(ok)
    assert forwarded["DATABRICKS_TOKEN"].secret and isinstance(forwarded["DATABRICKS_TOKEN"].value, Secret)
    assert forwarded["DATABRICKS_HOST"].value == "https://x.cloud"


def test_databricks_oauth_replaces_the_token(work):
    host = {"MLFLOW_TRACKING_URI": "databricks", "DATABRICKS_HOST": "h", "DATABRICKS_CLIENT_ID": "id", "DATABRICKS_CLIENT_SECRET": CANARY}
    planned = plan_for(work, "  disable_mlflow: false\n", host)
    assert not planned.problems
    assert env(planned)["DATABRICKS_CLIENT_SECRET"].secret


def test_databricks_oauth_half_set_names_the_other_half_not_the_token(work):
    planned = plan_for(work, "  disable_mlflow: false\n", {"MLFLOW_TRACKING_URI": "databricks", "DATABRICKS_CLIENT_ID": "id"})
    text = messages(planned)
    assert "DATABRICKS_CLIENT_SECRET" in text and "DATABRICKS_HOST" in text
    assert "DATABRICKS_TOKEN" not in text  # the user chose OAuth


@pytest.mark.parametrize("uri", ["databricks://my-profile", "databricks://my-profile:prefix"])
def test_databricks_profile_sign_in_reads_the_profile_not_the_env(work, uri):
    planned = plan_for(work, "  disable_mlflow: false\n  disable_wandb: false\n", {"MLFLOW_TRACKING_URI": uri})
    text = messages(planned)
    assert "profile [my-profile]" in text and ".databrickscfg" in text and "does not exist" in text
    assert "WANDB_API_KEY" in text  # every problem at once
    [missing] = [p.message for p in planned.problems if p.message.startswith("missing required")]
    assert "DATABRICKS" not in missing  # the profile holds host and credentials

    (work / ".databrickscfg").write_text(f"[other]\nhost = https://o.cloud\ntoken = {CANARY}\n")
    assert "has no such profile" in messages(plan_for(work, "  disable_mlflow: false\n", {"MLFLOW_TRACKING_URI": uri}))

    (work / ".databrickscfg").write_text("[my-profile]\nhost = https://p.cloud\nclient_id = abc\n")
    text = messages(plan_for(work, "  disable_mlflow: false\n", {"MLFLOW_TRACKING_URI": uri}))
    assert "has no client_secret" in text
    assert CANARY not in text

    (work / ".databrickscfg").write_text(f"[my-profile]\nhost = https://p.cloud\ntoken = {CANARY}\n")
    ok = plan_for(work, "  disable_mlflow: false\n", {"MLFLOW_TRACKING_URI": uri})
    assert not ok.problems
    assert any("inside the container" in w for w in ok.warnings)  # the job needs the file or env credentials
    assert CANARY not in repr(ok.warnings) + repr(ok.plan.record())


def test_databricks_config_file_from_the_environment(work):
    cfg = work / "elsewhere.cfg"
    cfg.write_text(f"[p]\nhost = https://p.cloud\ntoken = {CANARY}\n")
    planned = plan_for(work, "  disable_mlflow: false\n", {"MLFLOW_TRACKING_URI": "databricks://p", "DATABRICKS_CONFIG_FILE": str(cfg)})
    assert not planned.problems


def test_store_credentials_forwarded_as_secrets_only_when_mlflow_is_on(work):
    host = {"MLFLOW_TRACKING_URI": "http://m:5000", "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": CANARY,
            "AWS_SESSION_TOKEN": CANARY + "-s", "MLFLOW_S3_ENDPOINT_URL": "http://s3:9000", "AZURE_CLIENT_SECRET": CANARY + "-a"}
    forwarded = env(plan_for(work, "  disable_mlflow: false\n", host))
    for name in ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AZURE_CLIENT_SECRET"):
        assert forwarded[name].secret and isinstance(forwarded[name].value, Secret), name
    assert forwarded["MLFLOW_S3_ENDPOINT_URL"].value == "http://s3:9000"
    off = env(plan_for(work, "  disable_mlflow: true\n", host))
    assert not any(name.startswith(("AWS_", "AZURE_", "MLFLOW_S3")) for name in off)


def test_a_store_credential_the_policy_does_not_mask_is_not_forwarded(work, monkeypatch):
    import dataclasses

    from runner.trackers import tracker

    mlflow = tracker("mlflow")
    monkeypatch.setattr(mlflow, "SETTINGS", dataclasses.replace(mlflow.SETTINGS, secrets=mlflow.SETTINGS.secrets + ("AWS_CA_BUNDLE",)))
    planned = plan_for(work, "  disable_mlflow: false\n", {"MLFLOW_TRACKING_URI": "http://m:5000", "AWS_CA_BUNDLE": CANARY})
    assert "AWS_CA_BUNDLE" not in env(planned)
    assert any("AWS_CA_BUNDLE is set but not forwarded" in w for w in planned.warnings)
    assert CANARY not in repr(planned.warnings)


def test_databricks_uc_is_not_a_tracking_uri_needing_host():
    assert not is_databricks_uri("databricks-uc")
    assert not is_databricks_uri("http://databricks.example")


def test_mlflow_needs_a_tracking_uri(work):
    planned = plan_for(work, "  disable_mlflow: false\n")
    assert "MLFLOW_TRACKING_URI" in messages(planned)


@pytest.mark.parametrize("mode", ["offline", "disabled", "OFFLINE", "dryrun"])
def test_wandb_offline_needs_no_key(work, mode):
    planned = plan_for(work, "  disable_wandb: false\n  wandb_save_dir: /out\n", {"WANDB_MODE": mode})
    assert not planned.problems, messages(planned)
    assert env(planned)["WANDB_MODE"].value == mode


def test_wandb_mode_from_an_env_literal_counts(work):
    """``--env WANDB_MODE=offline`` is what the job sees, so no key is needed."""
    planned = plan_for(work, "  disable_wandb: false\n", flags=LaunchFlags(gpu="none", env=("WANDB_MODE=offline",)))
    assert not planned.problems, messages(planned)
    # offline without WANDB_DIR: no "lost" warning any more, the launch mounts one from the run's directory
    assert not any("lost when it is removed" in w for w in planned.warnings)


def test_wandb_online_forwards_key_as_secret_and_settings_as_env(work):
    planned = plan_for(
        work,
        "  disable_wandb: false\n  wandb_project: llama3\n  wandb_entity: team\n  wandb_exp_name: run7\n  wandb_save_dir: /out/wb\n",
        {"WANDB_API_KEY": CANARY, "WANDB_PROJECT": "host-project", "WANDB_BASE_URL": "http://127.0.0.1:9"},
    )
    assert not planned.problems
    forwarded = env(planned)
    assert forwarded["WANDB_API_KEY"].secret and forwarded["WANDB_API_KEY"].value.reveal() == CANARY
    assert forwarded["WANDB_PROJECT"].value == "llama3"  # the config setting beats the host's value
    assert forwarded["WANDB_ENTITY"].value == "team"
    assert forwarded["WANDB_NAME"].value == "run7"
    assert forwarded["WANDB_DIR"].value == "/out/wb"
    assert forwarded["WANDB_BASE_URL"].value == "http://127.0.0.1:9"
    assert CANARY not in str(planned.plan.to_dict())


def test_torchtitan_reads_team_and_run_name(work):
    planned = plan_for(
        work,
        "  framework: torchtitan\n  wandb_project: p\n  wandb_entity: t\n  wandb_exp_name: r\n  metrics:\n    enable_wandb: true\n    log_freq: 5\n",
        {"WANDB_API_KEY": CANARY},
        command=TRAIN,
    )
    assert not planned.problems
    forwarded = env(planned)
    assert forwarded["WANDB_TEAM"].value == "t" and forwarded["WANDB_RUN_NAME"].value == "r"
    assert "WANDB_ENTITY" not in forwarded
    assert planned.plan.job.command[-2:] == ("--metrics.enable_wandb=true", "--metrics.log_freq=5")  # one token each, Primus-literal


def test_tensorboard_needs_a_dir_with_file_and_line(work):
    planned = plan_for(work, "  disable_tensorboard: false\n")
    [problem] = planned.problems
    assert "tensorboard_dir" in problem.message and problem.where.endswith(".primus.yaml:5")
    assert not plan_for(work, "  disable_tensorboard: false\n  tensorboard_dir: /out/tb\n").problems


def test_mlflow_upload_flags_without_mlflow_warn(work):
    planned = plan_for(work, "  mlflow_upload_logs: true\n  mlflow_upload_traces: true\n")
    assert not planned.problems
    [warning] = [w for w in planned.warnings if "mlflow_upload" in w]
    assert "mlflow_upload_logs" in warning and "mlflow_upload_traces" in warning and "disable_mlflow: false" in warning


def test_mlflow_run_name_defaults_to_the_job_name_and_reaches_primus(work):
    """The Primus launcher only turns MLflow on for a non-null mlflow_run_name: the runner always passes one."""
    planned = plan_for(work, "  disable_mlflow: false\n  mlflow_experiment_name: pretrain\n", {"MLFLOW_TRACKING_URI": "http://m:5000"}, command=TRAIN)
    assert not planned.problems
    assert planned.plan.job.trackers.run_name == "job-1"
    command = list(planned.plan.job.command)
    assert "--mlflow_run_name='job-1'" in command  # a str literal: Primus's eval gives back the str
    assert "--disable_mlflow=false" in command
    assert env(planned)["MLFLOW_EXPERIMENT_NAME"].value == "pretrain"


def test_configured_run_name_wins(work):
    planned = plan_for(work, "  disable_mlflow: false\n  mlflow_run_name: mine\n", {"MLFLOW_TRACKING_URI": "http://m:5000"}, command=TRAIN)
    assert planned.plan.job.trackers.run_name == "mine"
    assert [c for c in planned.plan.job.command if c.startswith("--mlflow_run_name")] == ["--mlflow_run_name='mine'"]


def test_run_name_with_mlflow_off_is_not_passed(work):
    """Passing it would switch MLflow on in the Primus launcher against the config."""
    planned = plan_for(work, "  mlflow_run_name: mine\n", command=TRAIN)
    assert not planned.problems
    assert not any(c.startswith("--mlflow_run_name") for c in planned.plan.job.command)
    assert any("mlflow_run_name" in w for w in planned.warnings)


def test_overrides_only_for_primus_training_commands(work):
    assert is_primus_training(TRAIN) and is_primus_training(["python", "primus/cli/main.py", "train", "posttrain"])
    assert not is_primus_training(["python", "train.py"]) and not is_primus_training(["train"])
    planned = plan_for(work, "  log_interval: 5\n", command=["python", "train.py"])
    assert planned.plan.job.command == ("python", "train.py")
    planned = plan_for(work, "  log_interval: 5\n", command=TRAIN)
    extra = list(planned.plan.job.command[len(TRAIN):])
    assert "--log_interval=5" in extra
    assert not any(c.startswith("--framework") for c in extra)  # the runner's own keys are not overrides


def test_maxtext_passes_log_period(work):
    planned = plan_for(work, "  framework: maxtext\n  log_period: 50\n", command=TRAIN)
    assert planned.plan.job.command[-1:] == ("--log_period=50",)
    assert planned.plan.job.trackers.enabled == ()


def test_one_logger_notice_for_megatron(work):
    training = plan_for(work, "  framework: megatron\n", command=TRAIN)
    assert any("One-Logger" in n for n in training.plan.job.notices)
    off = plan_for(work, "  framework: megatron\n  enable_one_logger: false\n", command=TRAIN)
    assert not any("One-Logger" in n for n in off.plan.job.notices)
    generic = plan_for(work, "  framework: generic\n", command=TRAIN)
    assert not any("One-Logger" in n for n in generic.plan.job.notices)


def test_config_hash_is_stable_and_changes_with_the_config(work):
    a = plan_for(work, "  disable_mlflow: true\n").plan.job.trackers.config_hash
    b = plan_for(work, "  disable_mlflow: true\n").plan.job.trackers.config_hash
    c = plan_for(work, "  disable_wandb: true\n  log_interval: 3\n").plan.job.trackers.config_hash
    assert len(a) == 64 and a == b != c


def test_unknown_tracker_key_is_a_schema_error_with_did_you_mean(work):
    (work / ".primus.yaml").write_text("trackers:\n  disable_wanbd: false\n")
    with pytest.raises(Exception) as info:
        load_config()
    assert "disable_wandb" in str(info.value)


# ------------------------------------------------------------------ the decisions on a merged config, directly

def decided(trackers: dict, env: dict | None = None, command=()):
    return analyze_trackers(Config({"trackers": trackers}), (env or {}).get, command)


def test_the_value_a_tracker_decision_sees_is_the_literal_the_job_gets_before_the_hosts():
    config = Config({"container": {"options": {"env": ["WANDB_MODE=offline", "HF_HOME", "EMPTY=", "A=1=2"]}}})
    literals = literal_values(config, ["WANDB_MODE=disabled", "ONLY_NAME"])
    assert literals == {"WANDB_MODE": "disabled", "EMPTY": "", "A": "1=2"}  # --env comes last and wins; a bare name is no literal
    lookup = job_lookup(literals, {"WANDB_MODE": "online", "EMPTY": "host", "HF_HOME": "/h"}.get)
    assert (lookup("WANDB_MODE"), lookup("EMPTY"), lookup("HF_HOME"), lookup("UNSET")) == ("disabled", "", "/h", None)


def test_torchtitan_turns_trackers_on_by_its_own_switches_and_says_when_megatrons_has_no_effect():
    plan = decided({"framework": "torchtitan", "disable_wandb": False, "disable_mlflow": False})
    assert plan.enabled == ()  # disable_wandb is Megatron's name: TorchTitan's switch is metrics.enable_wandb
    assert plan.warnings == ("trackers.disable_mlflow: TorchTitan has no MLflow integration; the setting has no effect",)
    on = decided({"framework": "torchtitan", "metrics": {"enable_wandb": True, "enable_tensorboard": True}}, {"WANDB_MODE": "offline"})
    assert on.enabled == ("tensorboard", "wandb") and on.warnings == ()


def test_generic_reads_megatrons_switches_and_the_client_mode_is_the_jobs_value_normalised():
    plan = decided({"framework": "generic", "disable_wandb": False}, {"WANDB_MODE": "  OFFLINE "})
    assert plan.framework == "generic" and plan.enabled == ("wandb",) and plan.wandb_mode == "offline"
    assert decided({}).wandb_mode == "online" and decided({}).framework == "megatron"


def test_the_trackers_are_decided_in_their_declared_order_and_each_is_registered():
    names = [d.name for d in declared_settings()]
    assert sorted(names) == sorted(TRACKERS) and [d.order for d in declared_settings()] == sorted(d.order for d in declared_settings())
    plan = decided({"disable_mlflow": False, "disable_wandb": False, "disable_tensorboard": False, "mlflow_run_name": "r"},
                   {"WANDB_MODE": "offline", "MLFLOW_TRACKING_URI": "http://127.0.0.1:1"})
    assert plan.enabled == tuple(names) and plan.run_name == "r"


def test_primus_training_is_train_then_pretrain_or_posttrain_anywhere_in_the_command():
    assert is_primus_training(["primus-cli", "direct", "--", "train", "posttrain", "--config", "x.yaml"])
    assert is_primus_training(["python", "primus/cli/main.py", "train", "pretrain"])
    assert not is_primus_training(["train", "pretraining"]) and not is_primus_training(["pretrain", "train"])
    assert not is_primus_training(["python", "train.py"]) and not is_primus_training(["train"])
