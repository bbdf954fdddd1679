"""The leak scanner: the scope's masker finding secrets by NAME in objects, streams and files, never the value."""

from __future__ import annotations

import base64
import io
import os

from runner.secrets import secret_scope
from runner.secrets.scan import CHUNK, Finding, Scanner, audit_paths
from secret_ref_helpers import canary

VALUE = canary("scan")


def _scanner(value: str = VALUE) -> Scanner:
    return Scanner.of(secret_scope(extra=[("HF_TOKEN", value)]))


def test_a_finding_names_the_secret_and_place_never_the_value():
    finding = Finding("HF_TOKEN", "Config.Env[0]")
    assert str(finding) == "HF_TOKEN at Config.Env[0]"
    assert finding.to_dict() == {"secret": "HF_TOKEN", "location": "Config.Env[0]"}


def test_an_object_is_walked_keys_and_values_with_their_paths():
    encoded = base64.b64encode(VALUE.encode()).decode()
    doc = {"Config": {"Env": ["A=1", f"B={VALUE}"], VALUE: None, "Labels": {"x": encoded}}, "Id": 3}
    found = _scanner().scan_object(doc, "")
    assert sorted(str(f) for f in found) == ["HF_TOKEN at Config.Env[1]", "HF_TOKEN at Config.Labels.x",
                                             f"HF_TOKEN at Config.{VALUE} (key)"]


def test_a_text_stream_gives_line_numbers_and_a_value_split_by_a_chunk_boundary_is_found_once():
    data = b"line\n" * 3 + b"x" * (CHUNK - 15 - len(VALUE) // 2) + VALUE.encode() + b"\nend " + VALUE.encode() + b"\n"
    found = _scanner().scan_stream(io.BytesIO(data), "log")
    assert [str(f) for f in found] == ["HF_TOKEN at log:4", "HF_TOKEN at log:5"]


def test_a_binary_stream_gives_byte_offsets():
    data = b"\x00\x01" + b"y" * 10 + VALUE.encode()
    assert [f.location for f in _scanner().scan_stream(io.BytesIO(data), "blob")] == ["blob@12"]


def test_an_empty_scope_scans_nothing():
    scanner = Scanner.of(secret_scope())
    assert not scanner and scanner.scan_stream(io.BytesIO(VALUE.encode()), "x") == []
    assert Scanner.of(scanner) is scanner


def test_audit_walks_directories_names_files_and_reports_what_it_cannot_read(tmp_path):
    (tmp_path / "out" / "sub").mkdir(parents=True)
    (tmp_path / "out" / "sub" / "a.txt").write_text(f"ok\n{VALUE}\n")
    (tmp_path / "out" / f"{VALUE}.log").write_text("clean\n")
    (tmp_path / "out" / "link").symlink_to(tmp_path / "out" / "sub" / "a.txt")  # inside a directory: skipped
    os.mkfifo(tmp_path / "out" / "fifo")  # never opened: it would block
    (tmp_path / "target-link").symlink_to(tmp_path / "out")
    problems: list[str] = []
    found = audit_paths([tmp_path / "out", tmp_path / "target-link", tmp_path / "missing"], _scanner(), problems)
    assert sorted(str(f) for f in found) == sorted([f"HF_TOKEN at {tmp_path}/out/sub/a.txt:2",
                                                    f"HF_TOKEN at {tmp_path}/out/{VALUE}.log (file name)"])
    assert problems == [f"{tmp_path}/target-link: is a symbolic link, which audit does not follow (give the file it points to)",
                        f"{tmp_path}/missing: No such file or directory"]
