"""The post-build scan and ``audit IMAGE``: a secret value in scope found in an image's config, history
or layers, named by place (a field, a layer's diff id, a file) and by the secret's name."""

from __future__ import annotations

import hashlib
import io
import tarfile

from runner.clients.engine_api import ApiError
from runner.images import scan
from runner.secrets import Masker, secret_scope

CANARY = "image-scan-canary-27b4e9f1"
MASKER = Masker([("HF_TOKEN", CANARY)])


def tar_of(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


BASE_LAYER = tar_of({"etc/os-release": f"ID=base {CANARY}\n".encode()})  # a base image's own problem, not this build's
CLEAN_LAYER = tar_of({"app/main.py": b"print(1)\n"})
LEAKY_LAYER = tar_of({"app/.env": f"HF_TOKEN={CANARY}\n".encode(), f"app/{CANARY}.txt": b""})


def diff_id(layer: bytes) -> str:
    return "sha256:" + hashlib.sha256(layer).hexdigest()


class Engine:
    def __init__(self, images: dict[str, dict], history=(), saved: bytes = b""):
        self.images, self.history, self.saved, self.deleted = images, list(history), saved, []

    def inspect_image(self, name):
        return self.images.get(name)

    def request(self, method, path, query=None):
        if method == "DELETE":
            self.deleted.append(path)
            raise ApiError(409, "image is in use")
        if path.endswith("/history"):
            return self.history
        return self.images[path.split("/")[2]]

    def stream(self, path):
        assert path.endswith("/get")
        yield from (self.saved[i:i + 7000] for i in range(0, len(self.saved), 7000))


def saved_archive() -> bytes:
    return tar_of({"manifest.json": b"[]", "aaa111/layer.tar": BASE_LAYER, "bbb222/layer.tar": CLEAN_LAYER,
                   "ccc333/layer.tar": LEAKY_LAYER})


IMAGE = {"Id": "sha256:img", "Config": {"Env": ["PATH=/bin", f"HF_TOKEN={CANARY}"], "Cmd": ["train"]},
         "RootFS": {"Layers": [diff_id(BASE_LAYER), diff_id(CLEAN_LAYER), diff_id(LEAKY_LAYER)]}}
BASE = {"Id": "sha256:base", "RootFS": {"Layers": [diff_id(BASE_LAYER)]}}
HISTORY = [{"CreatedBy": "/bin/sh -c #(nop) FROM base"}, {"CreatedBy": f"/bin/sh -c echo {CANARY} > /app/.env"}]


def test_the_config_and_history_are_scanned_by_field():
    eng = Engine({"img": IMAGE}, HISTORY)
    assert scan.scan_image(eng, "img", MASKER) == ["Config.Env", "history[1].CreatedBy"]
    assert scan.scan_image(eng, "img", Masker()) == []  # nothing in scope: nothing asked


def test_only_the_builds_own_layers_are_named_from_the_saved_image():
    eng = Engine({"img": IMAGE, "base": BASE}, saved=saved_archive())
    assert scan.scan_layers(eng, "img", "base", MASKER, chunk=4096) == [f"layer {diff_id(LEAKY_LAYER)}"]
    assert scan.scan_layers(eng, "img", None, MASKER) == [f"layer {diff_id(BASE_LAYER)}", f"layer {diff_id(LEAKY_LAYER)}"]


def test_readable_overlay_directories_are_read_directly(tmp_path):
    dirs = []
    for i, files in enumerate(({"etc/os-release": CANARY}, {"app/main.py": "print(1)"}, {"app/notes": "x", f"app/{CANARY}": ""})):
        for name, text in files.items():
            (tmp_path / str(i) / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / str(i) / name).write_text(text)
        dirs.append(str(tmp_path / str(i)))
    (tmp_path / "1" / "link").symlink_to(tmp_path / "0" / "etc" / "os-release")  # not followed
    overlay = {**IMAGE, "GraphDriver": {"Name": "overlay2", "Data": {"LowerDir": f"{dirs[1]}:{dirs[0]}", "UpperDir": dirs[2]}}}
    eng = Engine({"img": overlay, "base": BASE})  # no saved archive: reading it would fail the test
    assert scan.scan_layers(eng, "img", "base", MASKER) == [f"layer {diff_id(LEAKY_LAYER)}"]


def test_audit_names_every_place_and_never_the_value():
    eng = Engine({"img": IMAGE}, HISTORY, saved_archive())
    findings = scan.audit_image(eng, "img", secret_scope(extra=[("HF_TOKEN", CANARY)]))
    places = [f.location for f in findings]
    assert "Config.Env[1]" in places and "history[1].created_by" in places
    assert "layer ccc333:app/.env:1" in places
    assert [p for p in places if p.endswith("(file name)")] == [f"layer ccc333:app/{CANARY}.txt (file name)"]  # the name is the place
    assert "layer aaa111:etc/os-release:1" in places
    assert {f.secret for f in findings} == {"HF_TOKEN"}
    assert scan.audit_image(eng, "img", secret_scope(extra=[("HF_TOKEN", CANARY)]), layers=False)[-1].location == "history[1].created_by"


def test_removing_an_image_the_daemon_keeps_is_not_an_error():
    eng = Engine({})
    scan.remove_image(eng, "sha256:img")
    assert eng.deleted == ["/images/sha256%3Aimg"]
