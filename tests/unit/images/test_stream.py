"""A build's output as the user sees it: masked before anything is shown or kept, each builder's lines
(the Engine API's messages, BuildKit's and Podman's plain lines) as numbered steps, cached or run."""

from __future__ import annotations

import json

from runner.images.spec import BuildSpec
from runner.images.stream import Progress, run_classic
from runner.secrets import Masker
from runner.ui import Output


def test_buildkit_plain_progress_counts_steps_cache_hits_and_runs(capsys):
    progress = Progress(Output(color=False), "t")
    for line in [
        "#1 [internal] load build definition from Dockerfile", "#1 DONE 0.0s",
        "#4 [stage-0 1/3] FROM docker.io/library/busybox", "#5 [stage-0 2/3] COPY x /x", "#6 [stage-0 3/3] RUN make",
        "#4 DONE 0.0s", "#5 CACHED", "#6 0.464 compiling", "#6 DONE 2.5s", "#7 exporting to image", "#7 DONE 0.1s",
    ]:
        progress.buildkit_line(line)
    progress.close()
    assert (progress.total, progress.cache_hits, progress.ran) == (3, 1, 1)
    err = capsys.readouterr().err
    assert "[1/3] base    FROM" in err and "[2/3] cached  COPY x /x" in err and "[3/3] run     RUN make (2.5s)" in err
    assert "[3/3] running RUN make\n    compiling\n" in err  # a step's output as it comes, under its name
    assert "internal" not in err  # the builder's own vertices are not the user's steps


CANARY = "stream-canary-9a41c7e0"


class ClassicEngine:
    """The Engine API's ``POST /build``: JSON messages, a line possibly split across two."""

    def __init__(self, messages):
        self.messages, self.params = messages, None

    def stream(self, path, params, method, body, headers):
        assert (path, method, headers) == ("/build", "POST", {"Content-Type": "application/x-tar"})
        self.params = params
        yield "".join(json.dumps(m) + "\r\n" for m in self.messages).encode()


def classic_spec():
    return BuildSpec(None, "/ctx", "Dockerfile", None, "me/app:1",
                     (("HTTPS_PROXY", f"http://u:{CANARY}@proxy:3128"), ("HTTP_PROXY", "http://proxy:3128"), ("A", "1")),
                     (), ("Dockerfile",), None, "h")


def test_a_classic_build_is_masked_counted_and_its_image_id_read(capsys):
    eng = ClassicEngine([{"stream": "Step 1/3 : FROM busybox"}, {"stream": "\n"}, {"stream": " ---> 1234\n"},
                         {"stream": "Step 2/3 : RUN echo $T\n"}, {"stream": " ---> Running in abc\n"},
                         {"stream": f"token {CANARY[:9]}"}, {"stream": f"{CANARY[9:]}\n"},
                         {"stream": "Step 3/3 : LABEL io.primus-runner.build-key=k\n"}, {"aux": {"ID": "sha256:built"}}])
    masker = Masker([("HTTPS_PROXY_PASSWORD", CANARY)])
    progress = Progress(Output(color=False, masker=masker), "me/app:1", own_steps=1)
    image_id, error, log = run_classic(eng, classic_spec(), b"tar", {"l": "v"}, progress, masker)
    progress.close()
    assert (image_id, error) == ("sha256:built", None)
    assert CANARY not in "".join(log) and "token ***\n" in "".join(log)
    assert (progress.total, progress.ran) == (2, 1)  # the runner's own LABEL step is not the user's
    err = capsys.readouterr().err
    assert "[1/2] base    FROM busybox" in err and "[2/2] run     RUN echo $T" in err and "    token ***" in err
    assert "LABEL" not in err and CANARY not in err
    assert json.loads(eng.params["buildargs"]) == {"HTTP_PROXY": "http://proxy:3128", "A": "1"}  # no password in the URL
    assert eng.params["pull"] == 0 and json.loads(eng.params["labels"]) == {"l": "v"}


def test_a_classic_build_error_is_masked_in_the_log():
    eng = ClassicEngine([{"stream": "Step 1/1 : RUN false\n"}, {"error": f"failed with {CANARY}"}])
    masker = Masker([("T", CANARY)])
    image_id, error, log = run_classic(eng, classic_spec(), b"", {}, Progress(Output(color=False, masker=masker), "t"), masker)
    assert image_id is None and error == f"failed with {CANARY}" and log[-1] == "failed with ***\n"


def test_podman_lines_are_read_as_steps(capsys):
    progress = Progress(Output(color=False), "t")
    for line in ["STEP 1/3: FROM busybox", "--> 0123abcd", "STEP 2/3: COPY x /x", "--> Using cache 9f8e", "STEP 3/3: RUN make",
                 "compiling", "--> 4567", "COMMIT t", "Successfully tagged localhost/t:latest", "a" * 64]:
        progress.podman_line(line)
    progress.close()
    assert (progress.total, progress.cache_hits, progress.ran) == (3, 1, 1)
    err = capsys.readouterr().err
    assert "[2/3] cached  COPY x /x" in err and "    compiling" in err and "Successfully" not in err and "a" * 64 not in err
