"""The post-build scan and ``audit IMAGE``: a secret value in scope found in an image's config, history
or layers, named by place (a field, a layer's diff id, a file) and by the secret's name, never by its value.
``Engine`` below answers the few engine calls the scan makes from fixed data; one test speaks the real
Engine API client to a loopback server, for the paths the scan asks."""

from __future__ import annotations

import hashlib
import io
import tarfile

from loopback_servers import Server
from runner.clients.engine_api import ApiError
from runner.clients.engine_api.api import Engine as ApiEngine
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


def test_the_images_comment_author_container_config_and_history_comments_and_tags_are_scanned_too():
    image = {"Id": "sha256:img", "Comment": f"built with {CANARY}", "Author": "alice", "Config": {"Env": ["A=1"], "Labels": None},
             "ContainerConfig": {"Cmd": ["/bin/sh", "-c", f"export T={CANARY}"]}}
    history = [{"CreatedBy": "RUN true", "Comment": f"note {CANARY}"}, {"CreatedBy": "RUN true", "Tags": [f"repo:{CANARY}"]}]
    found = scan.scan_image(Engine({"img": image}, history), "img", MASKER)
    assert found == ["ContainerConfig.Cmd", "Comment", "history[0].Comment", "history[1].Tags"]
    assert CANARY not in " ".join(found)
    # An image the daemon does not know: its history is still read, nothing else is guessed.
    assert scan.scan_image(Engine({}, history), "img", MASKER) == ["history[0].Comment", "history[1].Tags"]


def test_a_value_split_across_two_reads_is_found_in_a_saved_layer_and_an_overlay_file(tmp_path):
    # 32-byte reads: the layer's file data starts at 512 (after its tar header), the value at 532, across the read at 544.
    layer = tar_of({"app/notes": b"x" * 20 + CANARY.encode()})
    image = {"RootFS": {"Layers": [diff_id(layer)]}}
    eng = Engine({"img": image}, saved=tar_of({"manifest.json": b"[]", "ddd444/layer.tar": layer}))
    assert scan.scan_layers(eng, "img", None, MASKER, chunk=32) == [f"layer {diff_id(layer)}"]
    top = tmp_path / "top"
    (top / "app").mkdir(parents=True)
    (top / "app" / "notes").write_text("x" * 20 + CANARY)  # bytes 20..45, across the read at 32
    overlay = {"RootFS": {"Layers": ["sha256:one"]}, "GraphDriver": {"Name": "overlay2", "Data": {"UpperDir": str(top)}}}
    assert scan.scan_layers(Engine({"img": overlay}), "img", None, MASKER, chunk=32) == ["layer sha256:one"]
    (top / "app" / "notes").write_text("x" * 20 + CANARY[:-1])
    assert scan.scan_layers(Engine({"img": overlay}), "img", None, MASKER, chunk=32) == []


def test_storage_this_process_cannot_read_as_layers_falls_back_to_the_saved_image(tmp_path):
    dirs = [tmp_path / str(i) for i in range(3)]
    for d in dirs:
        d.mkdir()
    lower = f"{dirs[1]}:{dirs[0]}"
    for driver in ({"Name": "btrfs", "Data": {"UpperDir": str(dirs[2])}},  # not overlay
                   {"Name": "overlay2", "Data": {"LowerDir": str(dirs[0]), "UpperDir": str(dirs[2])}},  # 2 dirs, 3 layers
                   {"Name": "overlay2", "Data": {"LowerDir": f"{lower}:{tmp_path / 'gone'}", "UpperDir": str(dirs[2])}},
                   {"Name": "overlay2", "Data": {"LowerDir": lower}}):  # no upper directory
        eng = Engine({"img": {**IMAGE, "GraphDriver": driver}, "base": BASE}, saved=saved_archive())
        # The empty directories hold nothing: a hit can only come from the saved archive.
        assert scan.scan_layers(eng, "img", "base", MASKER) == [f"layer {diff_id(LEAKY_LAYER)}"], driver


def test_a_base_whose_layers_are_not_the_images_first_ones_leaves_every_layer_the_builds(tmp_path):
    dirs = []
    for i, text in enumerate((CANARY, "clean", CANARY)):
        (tmp_path / str(i)).mkdir()
        (tmp_path / str(i) / "f").write_text(text)
        dirs.append(str(tmp_path / str(i)))
    overlay = {**IMAGE, "GraphDriver": {"Name": "overlay2", "Data": {"LowerDir": f"{dirs[1]}:{dirs[0]}", "UpperDir": dirs[2]}}}
    other_base = {"RootFS": {"Layers": ["sha256:something-else"]}}
    layers = IMAGE["RootFS"]["Layers"]
    assert scan.scan_layers(Engine({"img": overlay, "base": other_base}), "img", "base", MASKER) == [f"layer {layers[0]}", f"layer {layers[2]}"]


def test_nothing_in_scope_asks_the_engine_nothing():
    class Silent:  # any call is a failure: with no secret in scope there is nothing to look for
        def __getattr__(self, name):
            raise AssertionError(f"the scan asked the engine ({name})")

    assert scan.scan_image(Silent(), "img", Masker()) == []
    assert scan.scan_layers(Silent(), "img", "base", Masker()) == []


def test_against_an_engine_api_the_name_is_one_path_segment_and_removal_is_forced():
    def answer(_server, request):
        path = request["path"].split("?")[0]
        if path.endswith("/_ping") or path.endswith("/version"):
            return 200, {"Api-Version": "1.43", "Content-Type": "application/json"}, {"ApiVersion": "1.43", "Version": "24.0.0"}
        if path.endswith("/images/registry.example%3A5000%2Fteam%2Fapp%3Av1/json"):
            return 200, {"Content-Type": "application/json"}, {"Config": {"Env": [f"HF_TOKEN={CANARY}"]}}
        if path.endswith("/history"):
            return 200, {"Content-Type": "application/json"}, b'[{"CreatedBy": "RUN true"}]'
        return 409, {"Content-Type": "application/json"}, {"message": "conflict: image is being used by a container"}

    with Server(answer) as server:
        engine = ApiEngine(host=f"tcp://{server.netloc}")
        assert scan.scan_image(engine, "registry.example:5000/team/app:v1", MASKER) == ["Config.Env"]
        scan.remove_image(engine, "sha256:img")  # the daemon keeps it (409): not an error
    [delete] = [r for r in server.requests if r["method"] == "DELETE"]
    assert delete["path"].split("?")[0].endswith("/images/sha256%3Aimg") and delete["path"].split("?")[1] == "force=1"
