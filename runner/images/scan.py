"""What the daemon knows about an image, and the post-build scan for secret values.

After every build (any builder) the image's config and history are scanned for
every secret in scope; a hit removes the image and fails the build with exit 3
(``build`` is a run-time command: the contract gives it 0/2/3; ``audit`` owns 4).
"""

from __future__ import annotations

import json
import tarfile
from urllib.parse import quote

from runner.clients.engine_api.chunks import pieces_reader
from runner.secrets.scan import CHUNK, Finding, Scanner


def inspect_image(engine, name: str) -> dict | None:
    """``GET /images/NAME/json``, or None when the image is not there."""
    return engine.inspect_image(name)


def remove_image(engine, image_id: str) -> None:
    from runner.clients.engine_api import ApiError

    try:
        engine.request("DELETE", f"/images/{quote(image_id, safe='')}", {"force": 1})
    except ApiError:
        pass


def scan_image(engine, image: str, masker) -> list[str]:
    """Where a secret value in scope appears in the image's config or history (field paths, never values)."""
    if not masker:
        return []
    found: list[str] = []
    inspect = inspect_image(engine, image) or {}
    for section in ("Config", "ContainerConfig"):
        for key, value in (inspect.get(section) or {}).items():
            if value and masker.contains_secret(json.dumps(value).encode()):
                found.append(f"{section}.{key}")
    for field_name in ("Comment", "Author"):
        if inspect.get(field_name) and masker.contains_secret(str(inspect[field_name]).encode()):
            found.append(field_name)
    for index, entry in enumerate(engine.request("GET", f"/images/{quote(image, safe='')}/history") or []):
        for key in ("CreatedBy", "Comment", "Tags"):
            if entry.get(key) and masker.contains_secret(json.dumps(entry[key]).encode()):
                found.append(f"history[{index}].{key}")
    return found


def _layer_dirs(inspect: dict) -> list[str] | None:
    """The image's layer directories, bottom first, when the daemon's overlay storage is
    readable here (a local rootful daemon); None otherwise."""
    import os

    graph = inspect.get("GraphDriver") or {}
    data = graph.get("Data") or {}
    if graph.get("Name") not in ("overlay2", "overlay") or not data.get("UpperDir"):
        return None
    dirs = list(reversed([d for d in (data.get("LowerDir") or "").split(":") if d])) + [data["UpperDir"]]
    layers = (inspect.get("RootFS") or {}).get("Layers") or []
    if len(dirs) != len(layers) or not all(os.path.isdir(d) and os.access(d, os.R_OK | os.X_OK) for d in dirs):
        return None
    return dirs


def _dir_holds_secret(root: str, masker, chunk: int) -> bool:
    """Any regular file (or a name) under ``root`` holding a secret value; symlinks are not followed."""
    import os

    overlap = max(masker.max_len - 1, 0)
    for directory, subdirs, names in os.walk(root):
        for name in names + subdirs:
            path = os.path.join(directory, name)
            if masker.contains_secret(os.path.relpath(path, root).encode("utf-8", "surrogateescape")):
                return True
            if name in subdirs or os.path.islink(path) or not os.path.isfile(path):
                continue
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            except OSError:
                continue
            with os.fdopen(fd, "rb") as fh:
                tail = b""
                while data := fh.read(chunk):
                    if masker.contains_secret(tail + data):
                        return True
                    tail = data[-overlap:] if overlap else b""
    return False


def scan_layers(engine, image_id: str, base_id: str | None, masker, chunk: int = 16 << 20) -> list[str]:
    """Which of the image's own layers (not the base's) hold a secret value in scope.

    With the daemon's overlay storage readable here (a local rootful engine) the new
    layers' directories are read directly; otherwise ``docker save`` of the image is
    streamed through the masker's matcher. Nothing is written to disk either way.
    A layer is named by its diff id (``sha256:…``), never a value.
    """
    if not masker:
        return []
    inspect = inspect_image(engine, image_id) or {}
    layers = (inspect.get("RootFS") or {}).get("Layers") or []
    base_layers = ((inspect_image(engine, base_id) or {}).get("RootFS") or {}).get("Layers") or [] if base_id else []
    own = len(base_layers) if layers[:len(base_layers)] == base_layers else 0
    dirs = _layer_dirs(inspect)
    if dirs is not None:
        return [f"layer {layers[i]}" for i in range(own, len(layers)) if _dir_holds_secret(dirs[i], masker, chunk)]
    return _scan_saved(engine, image_id, set(base_layers), masker, chunk)


def _scan_saved(engine, image_id: str, base_layers: set[str], masker, chunk: int) -> list[str]:
    import hashlib

    overlap = max(masker.max_len - 1, 0)
    found: list[str] = []
    with tarfile.open(fileobj=pieces_reader(engine.stream(f"/images/{quote(image_id, safe='')}/get")), mode="r|") as tar:
        for member in tar:
            if not member.isfile() or not member.name.endswith("layer.tar"):
                continue
            digest, tail, hit = hashlib.sha256(), b"", False
            reader = tar.extractfile(member)
            while True:
                data = reader.read(chunk)
                if not data:
                    break
                digest.update(data)
                if not hit and masker.contains_secret(tail + data):
                    hit = True
                tail = data[-overlap:] if overlap else b""
            diff_id = "sha256:" + digest.hexdigest()
            if hit and diff_id not in base_layers:
                found.append(f"layer {diff_id}")
    return found


# ------------------------------------------------------------------ audit of any image

def audit_image(engine, image: str, scope, layers: bool = True) -> list[Finding]:
    """``audit IMAGE``: the image's config, labels and history, and (``layers``) every file in every layer."""
    scanner = Scanner.of(scope)
    ref = quote(image, safe="")
    found = scanner.scan_object(engine.request("GET", f"/images/{ref}/json"), "")
    for i, entry in enumerate(engine.request("GET", f"/images/{ref}/history") or []):
        for key, value in entry.items():
            found += scanner.scan_object(value, f"history[{i}].{_snake(key)}")
    if layers:
        found += _scan_image_layers(engine.stream(f"/images/{ref}/get"), scanner)
    return found


def _snake(key: str) -> str:
    return "".join("_" + c.lower() if c.isupper() and i else c.lower() for i, c in enumerate(key))


def _scan_image_layers(chunks, scanner: Scanner) -> list[Finding]:
    """Every file of every layer of a ``docker save`` stream."""
    found: list[Finding] = []
    with tarfile.open(fileobj=pieces_reader(chunks, CHUNK), mode="r|") as outer:
        for member in outer:
            if not member.isfile():
                continue
            fh = outer.extractfile(member)
            if member.name.endswith(".tar"):  # a layer: scan each file in it
                layer = member.name.split("/")[0][:12]
                with tarfile.open(fileobj=fh, mode="r|") as inner:
                    for item in inner:
                        for name in scanner.names_in(item.name.encode("utf-8", "surrogateescape")):
                            found.append(Finding(name, f"layer {layer}:{item.name} (file name)"))
                        if item.isfile():
                            found += scanner.scan_stream(inner.extractfile(item), f"layer {layer}:{item.name}")
            else:  # manifest, image config: already covered by inspect, but cheap
                found += scanner.scan_stream(fh, f"image archive:{member.name}")
    return found
