"""A job's output stream: masked (also across chunk boundaries), fed to the tail, written whole."""

from __future__ import annotations

import io
import os

from runner.engines.base import Tail
from runner.engines.output import Sink
from runner.secrets import Masker

CANARY = "sink-canary-7f3a91d2"


def test_a_buffer_gets_the_masked_output_and_the_tail_the_same_bytes():
    buf, tail = io.BytesIO(), Tail()
    sink = Sink(buf, Masker([("TOKEN", CANARY)]), tail)
    value = CANARY.encode()
    sink.write(b"before " + value[:5])  # the secret split across two writes
    sink.write(value[5:] + b" after\n")
    sink.close()
    assert buf.getvalue() == b"before *** after\n"
    assert tail.bytes() == buf.getvalue()
    assert value not in buf.getvalue() and value not in tail.bytes()


def test_a_descriptor_gets_every_byte_without_a_tail(tmp_path):
    path = tmp_path / "out"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        sink = Sink(fd, Masker(), None)
        sink.write(b"x" * (1 << 20))
        sink.write(b"end\n")
        sink.close()
    finally:
        os.close(fd)
    assert path.read_bytes() == b"x" * (1 << 20) + b"end\n"


def test_a_file_with_a_descriptor_is_written_through_it(tmp_path):
    path = tmp_path / "out"
    with open(path, "wb") as fh:
        fh.write(b"earlier ")  # flushed first: the sink's writes come after it
        sink = Sink(fh, Masker([("TOKEN", CANARY)]), None)
        sink.write(f"{CANARY}\n".encode())
        sink.close()
    assert path.read_bytes() == b"earlier ***\n"


def test_a_closed_reader_ends_the_output_quietly():
    read, write = os.pipe()
    os.close(read)
    try:
        sink = Sink(write, Masker(), None)
        sink.write(b"nobody reads this\n")  # BrokenPipeError: dropped, not raised
        sink.close()
    finally:
        os.close(write)
