"""runner.clients.engine_api.chunks: streamed answers and an attached container's frames, whatever the chunk boundaries."""

from __future__ import annotations

import io
import random
import tarfile

import pytest

from runner.clients.engine_api.chunks import Demux, json_messages, pieces_reader


def test_a_character_cut_between_two_chunks_arrives_whole():
    data = '{"stream":"Step 1/2 : RUN echo \u00e9t\u00e9"}\n'.encode()
    cut = data.index("\u00e9".encode()) + 1  # inside the two bytes of the first é
    assert list(json_messages([data[:cut], data[cut:]])) == [{"stream": "Step 1/2 : RUN echo \u00e9t\u00e9"}]


def test_a_line_that_is_not_json_does_not_hide_the_error_after_it():
    chunks = [b"<html>proxy says hi</html>\n", b'{"error":"boom"}\n']
    assert list(json_messages(chunks)) == [{"error": "boom"}]


def test_bytes_that_are_not_utf8_reach_the_masker_as_they_were():
    [message] = json_messages([b'{"stream":"x\xffy"}'])
    assert message["stream"].encode("utf-8", "surrogateescape") == b"x\xffy"


def test_a_tar_stream_in_odd_pieces_reads_as_one_file():
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("a.txt")
        info.size = 5
        tar.addfile(info, io.BytesIO(b"hello"))
    raw = buffer.getvalue()
    pieces = [raw[i:i + 7] for i in range(0, len(raw), 7)]
    with tarfile.open(fileobj=pieces_reader(pieces), mode="r|") as tar:
        member = next(iter(tar))
        assert tar.extractfile(member).read() == b"hello"


# ------------------------------------------------------------------ an attached container's frames


def _frames(pieces: list[tuple[int, bytes]]) -> bytes:
    return b"".join(bytes([s, 0, 0, 0]) + len(p).to_bytes(4, "big") + p for s, p in pieces)


@pytest.mark.parametrize("seed", range(20))
def test_demux_reassembles_any_split(seed):
    rng = random.Random(seed)
    pieces = [(rng.choice((1, 2)), rng.randbytes(rng.randint(0, 3000))) for _ in range(rng.randint(1, 40))]
    stream = _frames(pieces)
    demux = Demux()
    got = {1: b"", 2: b""}
    pos = 0
    while pos < len(stream):
        step = rng.randint(1, 5000)
        for s, data in demux.feed(memoryview(stream)[pos:pos + step]):
            got[s] += data
        pos += step
    assert got[1] == b"".join(p for s, p in pieces if s == 1)
    assert got[2] == b"".join(p for s, p in pieces if s == 2)
