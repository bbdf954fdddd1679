"""What the daemon knows about an image, and the post-build scan for secret values.

After every build (any builder) the image's config and history are scanned for
every secret in scope; a hit removes the image and fails the build with exit 3
(``build`` is a run-time command: the contract gives it 0/2/3; ``audit`` owns 4).
"""

from __future__ import annotations

import io
import json
from urllib.parse import quote


def inspect_image(engine, name: str) -> dict | None:
    """``GET /images/NAME/json``, or None when the image is not there."""
    from runner.engine_api import ApiError

    try:
        return engine.request("GET", f"/images/{quote(name, safe='')}/json")
    except ApiError as exc:
        if exc.status == 404:
            return None
        raise


def remove_image(engine, image_id: str) -> None:
    from runner.engine_api import ApiError

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


class _Pieces(io.RawIOBase):
    """A raw file over the pieces of a streamed response, for ``tarfile``'s stream mode
    (wrapped in a BufferedReader: tarfile reads in 10 KB records)."""

    def __init__(self, pieces):
        self._pieces = iter(pieces)
        self._piece = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._piece:
            piece = next(self._pieces, None)
            if piece is None:
                return 0
            self._piece = memoryview(piece)
        n = min(len(buffer), len(self._piece))
        buffer[:n] = self._piece[:n]
        self._piece = self._piece[n:]
        return n


def scan_layers(engine, image_id: str, base_id: str | None, masker, chunk: int = 16 << 20) -> list[str]:
    """Which of the image's own layers (not the base's) hold a secret value in scope.

    Streams ``docker save`` of the image through the masker's matcher; nothing is
    written to disk. A layer is named by its diff id (``sha256:…``), never a value.
    """
    if not masker:
        return []
    import hashlib
    import tarfile

    base_layers: set[str] = set()
    if base_id:
        base_layers = set(((inspect_image(engine, base_id) or {}).get("RootFS") or {}).get("Layers") or [])
    overlap = max(masker.max_len - 1, 0)
    found: list[str] = []
    with tarfile.open(fileobj=io.BufferedReader(_Pieces(engine.stream(f"/images/{quote(image_id, safe='')}/get")), 1 << 20), mode="r|") as tar:
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
