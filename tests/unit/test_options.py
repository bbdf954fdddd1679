"""The command line's launch flags as a config layer: only what was given, under the config's own keys."""

from __future__ import annotations

from runner.options import LaunchFlags, RunOptions


def test_no_flags_are_an_empty_layer():
    assert LaunchFlags().config_layer() == {}
    assert LaunchFlags(env=("A=1",), labels=("x=y",), name=None).config_layer() == {}  # merged elsewhere, not as options


def test_flags_go_under_the_configs_keys_with_numbers_read_as_numbers():
    layer = LaunchFlags(image="img:1", shm_size="16g", cpus="2.5", volume=("/a:/b",), device=("/dev/kfd",),
                        privileged=False, cap_add=("SYS_PTRACE",), ulimit=("nofile=1:2",), hostname="h",
                        gpu="amd", gpus="0,1", pull="never", container_engine="podman").config_layer()
    assert layer == {"container": {
        "options": {"image": "img:1", "shm-size": "16g", "cpus": 2.5, "volume": ["/a:/b"], "device": ["/dev/kfd"],
                    "hostname": "h", "privileged": False, "cap-add": ["SYS_PTRACE"], "ulimit": ["nofile=1:2"]},
        "gpu": "amd", "gpus": "0,1", "pull": "never", "engine": "podman"}}


def test_a_cpus_value_that_is_not_a_number_is_left_for_the_schema_to_report():
    assert LaunchFlags(cpus="4").config_layer()["container"]["options"]["cpus"] == 4
    assert LaunchFlags(cpus="many").config_layer()["container"]["options"]["cpus"] == "many"


def test_an_engines_own_flags_are_found_by_its_name():
    slurm = object()
    options = RunOptions(command=("true",), engine_flags=(("slurm", slurm),))
    assert options.engine_flags_for("slurm") is slurm and options.engine_flags_for("docker") is None
