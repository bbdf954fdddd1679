"""Which CDI devices the specs in a directory define (what CUDA on Podman is checked against)."""

from __future__ import annotations

import json

from runner.gpus import cdi


def test_devices_named_by_json_and_yaml_specs_and_nothing_from_broken_ones(tmp_path):
    etc, run = tmp_path / "etc", tmp_path / "run"
    etc.mkdir()
    run.mkdir()
    (etc / "nvidia.json").write_text(json.dumps({"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu",
                                                 "devices": [{"name": "0"}, {"name": "1"}]}))
    (run / "nvidia.yaml").write_text("cdiVersion: 0.6.0\nkind: nvidia.com/gpu\ndevices:\n  - name: all\n  - name: '3'\n")
    (run / "broken.yaml").write_text("kind: [unclosed\n")
    (run / "notes.txt").write_text("kind: nvidia.com/gpu")
    (etc / "amd.json").write_text(json.dumps({"kind": "amd.com/gpu", "devices": [{"name": "2"}]}))
    dirs = (str(etc), str(run), str(tmp_path / "absent"))
    assert cdi.known_devices(dirs) == {"nvidia.com/gpu=0", "nvidia.com/gpu=1", "nvidia.com/gpu=all", "nvidia.com/gpu=3",
                                       "amd.com/gpu=2"}
    assert cdi.missing(["nvidia.com/gpu=1", "nvidia.com/gpu=2", "nvidia.com/gpu=3"], dirs) == ["nvidia.com/gpu=2"]
    assert cdi.missing(["nvidia.com/gpu=0"], (str(tmp_path / "absent"),)) == ["nvidia.com/gpu=0"]
