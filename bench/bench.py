#!/usr/bin/env python3
"""primus-runner benchmarks: each figure is a ratio against the raw engine, measured in the same run.

    python3 bench/bench.py              # every benchmark
    python3 bench/bench.py cli up_true  # some of them (names without the bench_ prefix)

Benchmarks are not tests: they print figures, they do not assert. Engines they
need (Docker, Slurm) must be running (bash .ci/setup-engines.sh).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The console script next to this interpreter: a version manager's shim on PATH
# (pyenv's is a bash script) would add its own start-up to every figure.
_SCRIPT = Path(sys.executable).with_name("primus-runner")
RUNNER = [str(_SCRIPT)] if _SCRIPT.exists() else [shutil.which("primus-runner") or sys.executable, *([] if shutil.which("primus-runner") else ["-m", "runner"])]


def timed(cmd: list[str], runs: int, **kwargs) -> list[float]:
    """Wall times (s) of ``runs`` runs of ``cmd``; output discarded; a failing run aborts."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kwargs)
        times.append(time.perf_counter() - start)
    return times


def report(name: str, value: float, unit: str, raw: float | None = None, raw_name: str = "raw") -> None:
    line = f"{name}: {value:.1f} {unit}"
    if raw is not None:
        line += f"  ({raw_name} {raw:.1f} {unit}; ratio {value / raw:.2f}x, overhead {value - raw:+.1f} {unit})"
    print(line, flush=True)


def _installed_env(**extra: str) -> dict:
    """The caller's environment as an installed runner sees it: modules load from their compiled
    bytecode (a shell with PYTHONDONTWRITEBYTECODE=1 would recompile every module on every run)."""
    env = dict(os.environ, NO_COLOR="1", **extra)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def interleaved(commands: dict[str, list[str]], runs: int, **kwargs) -> dict[str, list[float]]:
    """Wall times of each command, run in turn ``runs`` times (load changes hit every side alike)."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, cmd in commands.items():
            times[name] += timed(cmd, 1, **kwargs)
    return times


def compare(name: str, ours: list[float], raw: list[float], raw_name: str, scale: float = 1000, unit: str = "ms") -> None:
    """One figure against its raw path from the same run: both medians with min and max, the ratio, the load."""
    def spread_of(values: list[float]) -> str:
        v = sorted(x * scale for x in values)
        return f"{statistics.median(v):.1f} {unit} (min {v[0]:.1f}, max {v[-1]:.1f})"

    o, r = statistics.median(ours), statistics.median(raw)
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{name}: median of {len(ours)} {spread_of(ours)}; {raw_name} {spread_of(raw)}; ratio {o / r:.2f}x "
          f"({(o - r) * scale:+.1f} {unit}); load {load}", flush=True)


def bench_cli() -> None:
    """`--version` and `plan -- true` on the repository's .primus.yaml vs `python -c pass`, interleaved."""
    runs = int(os.environ.get("BENCH_CLI_RUNS", "20"))
    env = _installed_env()
    times = interleaved({"python": [sys.executable, "-c", "pass"], "version": RUNNER + ["--version"],
                         "plan": RUNNER + ["plan", "--", "true"]}, runs, env=env, cwd=REPO)
    compare("--version", times["version"], times["python"], "python -c pass")
    compare("plan -- true", times["plan"], times["python"], "python -c pass")


# The naive floor of `plan`: a Python process that imports yaml and jsonschema, loads the same
# config files and validates each against the same schema. No runner code; the schema's path is given.
_PLAN_FLOOR = r"""
import json, sys
import jsonschema, yaml
schema = json.loads(open(sys.argv[1], "rb").read())
validator = jsonschema.Draft202012Validator(schema)
for path in sys.argv[2:]:
    with open(path, encoding="utf-8") as f:
        validator.validate(yaml.safe_load(f) or {})
"""


def bench_plan_floor() -> None:
    """`plan -- true` on the repository's .primus.yaml against the naive floor (python importing yaml and
    jsonschema, loading the same files and validating them against the same schema), interleaved, in a
    home and XDG directories of their own: nothing from the user's files or caches on either side.

    Twice: on first sight (no layer known valid: plan validates every file, as the floor does), and
    after one real launch (`up --engine process -- true`) recorded the layers' digests
    (runner.config.known_valid), the steady state of a user's edit-plan-launch loop."""
    runs = int(os.environ.get("BENCH_PLAN_FLOOR_RUNS", "20"))
    policies = REPO / "policies"
    files = [policies / "defaults.yaml", REPO / ".primus.yaml"]
    floor = [sys.executable, "-c", _PLAN_FLOOR, str(policies / "config.schema.json"), *map(str, files)]
    plan = RUNNER + ["plan", "--", "true"]
    for moment in ("first sight", "after a launch"):
        with tempfile.TemporaryDirectory() as home:
            env = _installed_env(HOME=home, **{f"XDG_{k}_HOME": str(Path(home, k.lower())) for k in ("CACHE", "CONFIG", "STATE", "DATA")})
            if moment == "after a launch":
                subprocess.run(RUNNER + ["up", "--engine", "process", "--", "true"], env=env, cwd=REPO, check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            timed(plan, 1, env=env, cwd=REPO), timed(floor, 1, env=env, cwd=REPO)  # warm the page cache
            times = interleaved({"plan": plan, "floor": floor}, runs, env=env, cwd=REPO)
        compare(f"plan -- true (repository's .primus.yaml, {moment})", times["plan"], times["floor"],
                "naive floor (yaml + jsonschema)")


BUSYBOX = "primus-test/busybox:latest"
# What this sandboxed dockerd refuses (privileged, a raised nofile ulimit, a
# `video` group busybox lacks) is switched off, so both sides run the same job.
_BENCH_CONFIG = """container:
  gpu: none
  options:
    image: primus-test/busybox:latest
    privileged: false
    ulimit: []
    group-add: []
"""


def _instructions(cmd: list[str], **kwargs) -> int | None:
    """Instructions the process executes (valgrind's callgrind; its children are not counted), None
    without valgrind. Unlike a time, a count does not move with the host's load."""
    if shutil.which("valgrind") is None:
        return None
    found = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd], capture_output=True,
                           text=True, **kwargs)
    counts = [line.split()[-1] for line in found.stderr.splitlines() if "Collected :" in line]
    return int(counts[0]) if counts and found.returncode == 0 else None


def _private_home(home: str) -> dict:
    return _installed_env(HOME=home, PYTHONHASHSEED="0",
                          **{f"XDG_{k}_HOME": str(Path(home, k.lower())) for k in ("CACHE", "CONFIG", "STATE", "DATA")})


def bench_instructions() -> None:
    """The two start-up targets as instruction counts (valgrind), which a busy host does not move:
    `plan -- true` against the naive floor (first sight and after a launch, as `plan_floor`), and a
    no-change `build` against `plan -- true` in `build_nochange`'s project (the runner's own process
    each: the builder and git children are the same programs a raw build runs or ~1 M each)."""
    policies = REPO / "policies"
    floor = [sys.executable, "-c", _PLAN_FLOOR, str(policies / "config.schema.json"), str(policies / "defaults.yaml"),
             str(REPO / ".primus.yaml")]
    plan = RUNNER + ["plan", "--", "true"]
    with tempfile.TemporaryDirectory() as home:
        env = _private_home(home)
        base = _instructions(floor, env=env, cwd=REPO)
        if base is None:
            print("instructions: not measured (valgrind is not installed)", flush=True)
            return
        first = _instructions(plan, env=env, cwd=REPO)
        subprocess.run(RUNNER + ["up", "--engine", "process", "--", "true"], env=env, cwd=REPO, check=True, capture_output=True)
        after = _instructions(plan, env=env, cwd=REPO)
    for moment, count in (("first sight", first), ("after a launch", after)):
        print(f"instructions, plan -- true ({moment}): {count / 1e6:.0f} M; naive floor {base / 1e6:.0f} M; "
              f"ratio {count / base:.2f}x", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp, "project")
        project.mkdir()
        _nochange_project(project)
        env = _private_home(str(Path(tmp, "home")))
        build = RUNNER + ["build", "--file", "Dockerfile", "--context", ".", "--tag", "primus-bench/nochange:bench"]
        subprocess.run(build, env=env, cwd=project, check=True, capture_output=True)  # the first build runs its steps
        rebuild, planned = _instructions(build, env=env, cwd=project), _instructions(plan, env=env, cwd=project)
        subprocess.run([shutil.which("docker") or "docker", "rmi", "primus-bench/nochange:bench"], capture_output=True)
    print(f"instructions, build no-change: {rebuild / 1e6:.0f} M; plan -- true in the same project {planned / 1e6:.0f} M; "
          f"ratio {rebuild / planned:.2f}x (the target: the build's own work no more than plan's)", flush=True)


def _bench_dir() -> tempfile.TemporaryDirectory:
    tmp = tempfile.TemporaryDirectory()
    Path(tmp.name, ".primus.yaml").write_text(_BENCH_CONFIG)
    return tmp


def bench_up_true() -> None:
    """`up --gpu none -- true` vs `docker run --rm IMAGE true`, interleaved, median of 10 each (target <= +100 ms)."""
    runs = int(os.environ.get("BENCH_UP_RUNS", "10"))
    env = _installed_env()
    with _bench_dir() as cwd:
        up = RUNNER + ["up", "--gpu", "none", "--image", BUSYBOX, "--", "true"]
        raw = ["docker", "run", "--rm", BUSYBOX, "true"]
        timed(up, 1, env=env, cwd=cwd), timed(raw, 1, env=env, cwd=cwd)  # warm caches
        times = interleaved({"up": up, "raw": raw}, runs, env=env, cwd=cwd)
    compare("up -- true", times["up"], times["raw"], "docker run --rm")


_RECORD_COST = r"""
import os, sys, time
from runner.options import RunOptions, Sources, LaunchFlags
from runner.session.prepare import prepare
from runner.engines.base import RunContext, Launched
from runner.ui import Output
out = Output(color=False)
opts = RunOptions(command=("true",), sources=Sources(sys.argv[1], None), flags=LaunchFlags(gpu="none", image="primus-test/busybox:latest"))
prepared = prepare(out, opts.sources, opts.command, opts.flags)
ctx = RunContext(opts, prepared.scope, out, None, lookup=prepared.lookup)
class Engine: name = "docker"
class Handshake: env, links = {}, {}
print(time.time(), flush=True)  # the parent's clock stops when this process has exited: shutdown counts
from runner.runs import recorder
run = recorder.begin(opts, Engine(), prepared.plan, ctx, out, prepared.config)
time.sleep(0.1)  # the engine creates and starts the container (more than 100 ms for `docker run`)
run.started(Launched("cid", run.plan.job.name), Handshake(), detached=False)
time.sleep(0.1)  # the job runs and the engine reports its end (`up -- true`: 100-300 ms)
run.end(0)
"""


_RECORDER_CALLS = r"""
import sys, time
from runner.runs import recorder
spent = []
def timed(owner, name):
    call = getattr(owner, name)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            spent.append(time.perf_counter() - start)
    setattr(owner, name, wrapper)
timed(recorder, "begin"), timed(recorder.Run, "started"), timed(recorder.Run, "end")
from runner.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(sum(spent), file=sys.stderr)
"""


def _spread(values: list[float], scale: float = 1.0) -> str:
    return f"median {statistics.median(values) * scale:.1f} ms (min {min(values) * scale:.1f}, max {max(values) * scale:.1f})"


def bench_runs() -> None:
    """Runs: what a run's record (the store, run directory, log and lock; imports included) adds to a launch,
    against the same launch with `runs.record: false`, measured in the same run, interleaved, median of 10
    with min/max (target: under 10 ms): (a) end to end, `up -- true`; (b) the recorder's own calls in a fresh
    process each, from `begin` to the process's exit (a connection's close at exit counts), with 200 ms of
    engine time simulated around `started`; (c) (b)'s CPU time; (d) the launch's own thread's time in the
    recorder's calls during a real `up -- true`. (a)'s and (b)'s spread on a busy host is larger than the figure."""
    runs = 10
    with _bench_dir() as cwd, tempfile.TemporaryDirectory() as state:
        env = dict(os.environ, NO_COLOR="1", XDG_STATE_HOME=state)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: modules load from their compiled bytecode
        Path(cwd, "on.yaml").write_text("runs:\n  record: true\ncache:\n  enabled: false\n")  # the same layers on both sides
        Path(cwd, "off.yaml").write_text("runs:\n  record: false\ncache:\n  enabled: false\n")
        up = lambda cfg: RUNNER + ["--config", cfg, "up", "--gpu", "none", "--image", BUSYBOX, "--", "true"]  # noqa: E731
        timed(up("on.yaml"), 2, env=env, cwd=cwd), timed(up("off.yaml"), 2, env=env, cwd=cwd)  # warm caches; the store exists
        ups: dict[str, list[float]] = {"on.yaml": [], "off.yaml": []}
        costs: dict[str, list[float]] = {"on.yaml": [], "off.yaml": []}
        cpu: dict[str, list[float]] = {"on.yaml": [], "off.yaml": []}
        for _ in range(runs):
            for cfg in ups:
                ups[cfg] += timed(up(cfg), 1, env=env, cwd=cwd)
        for _ in range(runs + 1):
            for cfg in costs:
                before = _children_cpu()
                child = subprocess.run([sys.executable, "-c", _RECORD_COST, cfg], cwd=cwd, env=env, capture_output=True, text=True, check=True)
                costs[cfg].append(time.time() - float(child.stdout.split()[0]) - 0.2)
                cpu[cfg].append(_children_cpu() - before)
        costs = {cfg: values[1:] for cfg, values in costs.items()}  # the first wrote the bytecode
        cpu = {cfg: values[1:] for cfg, values in cpu.items()}
        calls: dict[str, list[float]] = {"on.yaml": [], "off.yaml": []}
        for _ in range(runs):
            for cfg in calls:
                child = subprocess.run([sys.executable, "-c", _RECORDER_CALLS, *up(cfg)[len(RUNNER):]], cwd=cwd, env=env,
                                       capture_output=True, text=True, check=True)
                calls[cfg].append(float(child.stderr.strip().splitlines()[-1]))
    on, off = statistics.median(ups["on.yaml"]), statistics.median(ups["off.yaml"])
    print(f"runs (a): up -- true with the record {_spread(ups['on.yaml'], 1000)}, without {_spread(ups['off.yaml'], 1000)}; "
          f"ratio {on / off:.3f}x, the record adds {(on - off) * 1000:+.1f} ms (target < 10 ms)", flush=True)
    rec, bare = statistics.median(costs["on.yaml"]), statistics.median(costs["off.yaml"])
    print(f"runs (b): begin to exit with the record {_spread(costs['on.yaml'], 1000)}, without {_spread(costs['off.yaml'], 1000)}; "
          f"ratio {rec / bare:.3f}x, the record adds {(rec - bare) * 1000:+.1f} ms (target < 10 ms)", flush=True)
    rec, bare = statistics.median(cpu["on.yaml"]), statistics.median(cpu["off.yaml"])
    print(f"runs (c): (b)'s processes' CPU time (all threads, the writer's too; a busy host stretches wall time, "
          f"not work) with the record {_spread(cpu['on.yaml'], 1000)}, without {_spread(cpu['off.yaml'], 1000)}; "
          f"the record adds {(rec - bare) * 1000:+.1f} ms of CPU", flush=True)
    rec, bare = statistics.median(calls["on.yaml"]), statistics.median(calls["off.yaml"])
    print(f"runs (d): in a real `up -- true`, the launch's own thread in begin, started and end with the record "
          f"{_spread(calls['on.yaml'], 1000)}, without {_spread(calls['off.yaml'], 1000)}; the record adds "
          f"{(rec - bare) * 1000:+.1f} ms there (the writer's work, (c), runs beside the job)", flush=True)


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


PODMAN_SOCKET = "/run/podman/podman.sock"


def _podman_service_cpu() -> float | None:
    """CPU seconds the rootful Podman API service has used (None: not found): what a launch costs
    the engine's side, which the client's own time does not show."""
    found = subprocess.run(["pgrep", "-f", f"podman system service.*{PODMAN_SOCKET}"], capture_output=True, text=True).stdout.split()
    try:
        fields = Path(f"/proc/{found[0]}/stat").read_text().rsplit(")", 1)[1].split()
    except (IndexError, OSError):
        return None
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def bench_up_true_podman() -> None:
    """`up --gpu none -- true` on rootful Podman (its API socket) vs `podman run --rm IMAGE true`,
    median of 10 each with min and max, interleaved (bash .ci/setup-podman.sh); then each side's CPU time per
    launch, its own processes' and the Podman service's (a busy host stretches wall time, not work)."""
    runs = 10
    env = dict(os.environ, NO_COLOR="1", DOCKER_HOST=f"unix://{PODMAN_SOCKET}")
    with _bench_dir() as cwd:
        up = RUNNER + ["up", "--gpu", "none", "--image", BUSYBOX, "--", "true"]
        raw = ["podman", "run", "--rm", BUSYBOX, "true"]
        timed(up, 1, env=env, cwd=cwd), timed(raw, 1, env=env, cwd=cwd)  # warm caches
        times: dict[str, list[float]] = {"up": [], "raw": []}
        own: dict[str, list[float]] = {"up": [], "raw": []}
        service: dict[str, list[float]] = {"up": [], "raw": []}
        for _ in range(runs):
            for side, cmd in (("up", up), ("raw", raw)):
                cpu, engine = _children_cpu(), _podman_service_cpu()
                times[side] += timed(cmd, 1, env=env, cwd=cwd)
                own[side].append(_children_cpu() - cpu)
                after = _podman_service_cpu()
                if engine is not None and after is not None:
                    service[side].append(after - engine)
    up_ms, raw_ms = statistics.median(times["up"]) * 1000, statistics.median(times["raw"]) * 1000
    print(f"up -- true on Podman: {spread(times['up'])}  (podman run --rm {spread(times['raw'])}; ratio {up_ms / raw_ms:.2f}x, "
          f"overhead {up_ms - raw_ms:+.1f} ms; load {os.getloadavg()[0]:.2f})", flush=True)
    print(f"  CPU per launch: up {spread(own['up'])}, podman run {spread(own['raw'])}; the Podman service's during them: "
          f"up {spread(service['up']) if service['up'] else '?'}, podman run {spread(service['raw']) if service['raw'] else '?'}", flush=True)


def bench_up_stream() -> None:
    """A job writing 256 MiB to stdout, with masking on (a secret in scope);
    `up` to /dev/null vs `docker run --rm` to /dev/null, median of 3 (target ratio <= 1.3)."""
    runs = 3
    job = ["sh", "-c", "head -c 268435456 /dev/zero | tr '\\0' 'a'"]
    env = dict(os.environ, NO_COLOR="1", BENCH_API_KEY="bench-secret-value-0123456789")
    with _bench_dir() as cwd:
        up = RUNNER + ["up", "--gpu", "none", "--image", BUSYBOX, "--env", "BENCH_API_KEY", "--"] + job
        raw = ["docker", "run", "--rm", BUSYBOX] + job
        ups, raws = [], []
        for _ in range(runs):
            ups += timed(up, 1, env=env, cwd=cwd)
            raws += timed(raw, 1, env=env, cwd=cwd)
    report("up 256 MiB stdout median of 3", statistics.median(ups), "s", statistics.median(raws), "docker run --rm >/dev/null")


def bench_build() -> None:
    """A no-change rebuild with `primus-runner build` vs `docker build` (the same builder) of the same context.
    Also a rebuild after one requirement changed, the recipe with and without its pip cache mount."""
    import io
    import json
    import tarfile

    from runner.images.builder import find_buildkit
    from runner.images.context import make_context
    from runner.images.recipe import resolve_build
    from runner.context import load_context
    from runner.options import BuildOptions, Sources

    base, tag, raw_tag, runs = "primus-test/python:bookworm", "primus-bench/rocm:bench", "primus-bench/rocm-raw:bench", 5
    env = dict(os.environ, NO_COLOR="1")
    cmd = RUNNER + ["--json", "build", "--base", base, "--tag", tag]
    warm = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, check=True)  # first build (may install)
    labels = json.loads(warm.stdout)["labels"]
    spec = resolve_build(BuildOptions(flavor="rocm", base=base, tag=tag), load_context(Sources()))
    with tempfile.TemporaryDirectory() as ctx:
        with tarfile.open(fileobj=io.BytesIO(make_context(spec))) as tar:
            tar.extractall(ctx)
        cli = find_buildkit()  # the recipes have RUN mounts: BuildKit when a CLI can drive it, as the runner does
        raw = [cli.cli if cli else "docker", "build", "-q", "-f", f"{ctx}/{spec.dockerfile}", "-t", raw_tag]
        raw += [x for k, v in spec.build_args for x in ("--build-arg", f"{k}={v}")]
        raw += [x for k, v in labels.items() for x in ("--label", f"{k}={v}")]
        raw_env = dict(env, DOCKER_BUILDKIT="1" if cli else "0")
        subprocess.run(raw + [ctx], env=raw_env, check=True, capture_output=True)  # warm
        ours = statistics.median(timed(cmd, runs, env=env, cwd=REPO)) * 1000
        theirs = statistics.median(timed(raw + [ctx], runs, env=raw_env)) * 1000
    report(f"build no-change rebuild median of {runs}", ours, "ms", theirs, f"docker build ({'BuildKit' if cli else 'classic'})")
    _bench_requirement_changed(base, env)


def _bench_requirement_changed(base: str, env: dict) -> None:
    """The recipe rebuilt after one pin changed (TRACKERS="mlflow-skinny six", six bumped): with its pip
    cache mount (only the changed wheel is downloaded) vs the same recipe without it, same builder."""
    import re

    seconds = {}
    with tempfile.TemporaryDirectory() as tmp:
        for case in ("with", "without"):
            cwd = Path(tmp) / case
            recipes = cwd / "recipes"
            shutil.copytree(REPO / "images", recipes)
            if case == "without":  # only the cache mount goes: the secret mounts keep it on BuildKit
                dockerfile = recipes / "rocm" / "Dockerfile"
                dockerfile.write_text(re.sub(r"--mount=type=cache,\S+\s*\\\n\s*", "", dockerfile.read_text()))
            (cwd / ".primus.yaml").write_text(f"images:\n  dir: {recipes}\n")
            requirements = recipes / "common" / "requirements.txt"
            # A line unique to this run: no layer cached by an earlier run may answer for the rebuild.
            requirements.write_text(requirements.read_text() + f"# bench {time.time_ns()}\nsix==1.16.0\n")
            cmd = RUNNER + ["--json", "build", "--base", base, "--tag", f"primus-bench/requirement-{case}:bench", "--build-arg", "TRACKERS=mlflow-skinny six"]
            subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, check=True)  # warm: every wheel fetched once
            requirements.write_text(requirements.read_text().replace("six==1.16.0", "six==1.17.0"))
            seconds[case] = timed(cmd, 1, env=env, cwd=cwd)[0]
    report("build one requirement changed, with the pip cache mount", seconds["with"], "s", seconds["without"], "without it")


# The no-change build's project: a base the engines' set-up preloads, one COPY and one RUN with a
# cache mount (BuildKit syntax: the runner builds it with BuildKit, whose rebuild the target is about).
_NOCHANGE_FILES = {
    "Dockerfile": f"FROM {BUSYBOX}\nCOPY app/ /app/\nRUN --mount=type=cache,target=/cache ls /app > /listing\n",
    "app/train.py": "print('train')\n",
    "app/config.yaml": "steps: 10\n",
    ".dockerignore": ".git\n",
    ".primus.yaml": _BENCH_CONFIG,
}


def _nochange_project(root: Path) -> None:
    """The project, committed in a git repository of its own (a build's labels name its revision)."""
    for name, text in _NOCHANGE_FILES.items():
        Path(root, name).parent.mkdir(parents=True, exist_ok=True)
        Path(root, name).write_text(text)
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", "-C", str(root)]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "bench project"]):
        subprocess.run(git + args, check=True, capture_output=True)


def _raw_command(dry_command: str, labels: dict[str, str], tag: str, iidfile: str) -> tuple[list[str], dict[str, str]]:
    """(argv, env) of the runner's own builder command (its `--dry-run`), as a user would type it: the same
    CLI, flags, build args and labels (the values the warm build set), the context directory in place of
    the runner's tar on stdin."""
    import shlex

    words = shlex.split(dry_command.removesuffix(" <context.tar"))
    env = {}
    while "=" in words[0] and not words[0].startswith("-"):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    argv, rest = [], iter(words)
    for word in rest:
        if word in ("--label", "--tag", "--iidfile"):
            value = next(rest)
            value = {"--tag": tag, "--iidfile": iidfile}.get(word) or f"{value.split('=', 1)[0]}={labels[value.split('=', 1)[0]]}"
            argv += [word, value]
        else:
            argv.append(word)
    return argv[:-1] + ["."], env


def bench_build_nochange() -> None:
    """A no-change `build` (BuildKit) against BuildKit's own no-change rebuild of the same context and
    Dockerfile with the runner's flags, build args and labels, and `plan -- true` in the same project,
    interleaved, median of 10 with min and max: the target is an overhead (build - raw) no more than plan's time."""
    _build_nochange("buildkit", "BuildKit", "")


def bench_build_nochange_podman() -> None:
    """`build_nochange` on Podman (`container.engine: podman`): the runner's `podman build` against the same
    command typed by hand, and `plan -- true` with the same config."""
    _build_nochange("podman", "Podman", "container:\n  engine: podman\n")


def _build_nochange(kind: str, label: str, config: str) -> None:
    import json

    runs = int(os.environ.get("BENCH_BUILD_NOCHANGE_RUNS", "10"))
    tag, raw_tag = "primus-bench/nochange:bench", "primus-bench/nochange-raw:bench"
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp, "project")
        project.mkdir()
        _nochange_project(project)
        Path(tmp, "engine.yaml").write_text(config)  # the same layers on every side
        top = ["--config", str(Path(tmp, "engine.yaml"))]
        args = [*top, "build", "--file", "Dockerfile", "--context", ".", "--tag", tag]
        env = _installed_env()
        query = lambda *extra: json.loads(subprocess.run(RUNNER + ["--json", *args, *extra], env=env, cwd=project,  # noqa: E731
                                                         capture_output=True, text=True, check=True).stdout)
        built, dry = query(), query("--dry-run")  # the first build runs its steps; then the command it runs
        if dry["builder"]["kind"] != kind:
            print(f"build no-change ({label}): not measured (the runner builds this with {dry['builder'].get('describe')})", flush=True)
            return
        raw, raw_env = _raw_command(dry["builder"]["command"], built["labels"], raw_tag, str(Path(tmp, "iid")))
        env.update(raw_env)  # DOCKER_BUILDKIT=1 for the raw side; the runner sets it for its child itself
        commands = {"build": RUNNER + args, "raw": raw, "plan": RUNNER + [*top, "plan", "--", "true"]}
        for cmd in commands.values():
            timed(cmd, 1, env=env, cwd=project)  # warm: the raw side's first build, the page cache
        times, cpu = _interleaved_cpu(commands, runs, env=env, cwd=project)
        rebuilt = query()
        subprocess.run([raw[0], "rmi", tag, raw_tag], capture_output=True)
    _nochange_report(label, raw[0], times, cpu, rebuilt)


def _nochange_report(label: str, cli: str, times: dict[str, list[float]], cpu: dict[str, list[float]], rebuilt: dict) -> None:
    compare(f"build no-change ({label})", times["build"], times["raw"], f"raw `{cli} build`")
    overhead = statistics.median(times["build"]) - statistics.median(times["raw"])
    plan = statistics.median(times["plan"])
    print(f"build no-change ({label}): overhead (build - raw) {overhead * 1000:.1f} ms; plan -- true {spread(times['plan'])}; "
          f"target overhead <= plan: {'met' if overhead <= plan else 'missed'} ({overhead / plan:.2f}x plan); "
          f"the rebuild: {rebuilt['cache_hits']} of {rebuilt['steps']} steps cached, {rebuilt['ran']} run", flush=True)
    cpu_overhead = statistics.median(cpu["build"]) - statistics.median(cpu["raw"])
    print(f"build no-change ({label}), CPU of the processes (a busy host stretches wall time, not work): build {spread(cpu['build'])}, "
          f"raw {spread(cpu['raw'])}, plan {spread(cpu['plan'])}; overhead {cpu_overhead * 1000:.1f} ms, "
          f"{cpu_overhead / statistics.median(cpu['plan']):.2f}x plan's", flush=True)


def _interleaved_cpu(commands: dict[str, list[str]], runs: int, **kwargs) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """``interleaved``, with each run's CPU time (its processes', children included) beside its wall time."""
    wall: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, cmd in commands.items():
            before = _children_cpu()
            wall[name] += timed(cmd, 1, **kwargs)
            cpu[name].append(_children_cpu() - before)
    return wall, cpu


_SUBMIT_CONFIG = """container:
  gpu: none
  options:
    image: primus-test/busybox:latest
    privileged: false
    ulimit: "nofile=1024:1024"
    group-add: []
    env: [BENCH_API_KEY]
slurm:
  nodes: 2
  time: "5"
"""

_RAW_SBATCH = """#!/bin/bash
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --time=5
#SBATCH --output=/dev/null
srun --nodes=2 --ntasks-per-node=1 --kill-on-bad-exit=1 bash -c 'exec docker run --rm --name primus-raw-$SLURM_JOB_ID-$SLURM_NODEID --label io.primus-runner.slurm-job=raw-$SLURM_JOB_ID --network host --ipc host -e BENCH_API_KEY -e NNODES=$SLURM_NNODES -e NODE_RANK=$SLURM_NODEID {image} sleep 60'
"""


def _running(client, label: str) -> int:
    return sum(1 for c in client.api.containers(filters={"label": label}) if c["State"] == "running")


def _until_both_running(client, label: str, start: float, timeout: float = 300) -> float:
    while time.perf_counter() - start < timeout:
        if _running(client, label) >= 2:
            return time.perf_counter() - start
        time.sleep(0.05)
    raise OSError(f"containers with {label} did not start within {timeout} s")


def bench_submit() -> None:
    """`submit` until all N containers run vs a hand-written `sbatch` + `srun docker run`
    of the same job, interleaved, for N = 1, 2, 4, 8 (those the cluster has: `NODES=8 .ci/setup-engines.sh`),
    median of BENCH_SUBMIT_RUNS (default 5) with min and max; then how each side grows per added node.

    Each time is also split at the moment Slurm shows the job RUNNING: before it is the scheduler's
    (when slurmctld next looks at its queue: it varies by a second or more, run to run, on both sides
    alike), after it is the job's own start on its nodes (the batch script, `srun`, each node's agent
    or `docker run`, the containers): the per-node slope of that part is the one the runner can move."""
    import json

    import docker

    client = docker.from_env(version="auto")
    runs = int(os.environ.get("BENCH_SUBMIT_RUNS", "5"))
    have = len(subprocess.run(["sinfo", "-h", "-N", "-o", "%N"], capture_output=True, text=True).stdout.split())
    sizes = [n for n in (1, 2, 4, 8) if n <= have]  # from 1: two nodes already give a per-node slope
    env = dict(os.environ, NO_COLOR="1", BENCH_API_KEY="bench-secret-value-0123456789")

    def until_all_running(job: str, label: str, n: int, start: float, timeout: float = 300) -> tuple[float, float]:
        """(submit to all N running, job RUNNING to all N running): polled in turn, one at a time."""
        started = None
        while time.perf_counter() - start < timeout:
            if started is None:
                state = subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], capture_output=True, text=True).stdout.strip()
                if state in ("RUNNING", "COMPLETING", "") or _running(client, label):
                    started = time.perf_counter()
            elif _running(client, label) >= n:
                done = time.perf_counter()
                return done - start, done - started
            time.sleep(0.05)
        raise OSError(f"containers with {label} did not start within {timeout} s")

    def drained(job: str) -> None:
        while subprocess.run(["squeue", "-h", "-j", job], capture_output=True, text=True).stdout.strip():
            time.sleep(0.1)  # both sides start from an empty queue

    medians: dict[int, tuple[float, ...]] = {}
    with tempfile.TemporaryDirectory(dir="/tmp") as cwd:
        Path(cwd, ".primus.yaml").write_text(_SUBMIT_CONFIG)
        for n in sizes:
            script = Path(cwd, f"raw-{n}.sbatch")
            script.write_text(_RAW_SBATCH.format(image=BUSYBOX).replace("--nodes=2", f"--nodes={n}"))
            ours, raws, ours_on_nodes, raws_on_nodes = [], [], [], []
            for _ in range(runs):
                start = time.perf_counter()
                result = subprocess.run(RUNNER + ["--json", "submit", "--gpu", "none", "--nodes", str(n), "--", "sleep", "60"],
                                        cwd=cwd, env=env, capture_output=True, text=True, check=True)
                job = json.loads(result.stdout)["job_id"]
                try:
                    total, on_nodes = until_all_running(job, f"io.primus-runner.slurm-job={job}", n, start)
                    ours.append(total), ours_on_nodes.append(on_nodes)
                finally:
                    subprocess.run(RUNNER + ["cancel", job], cwd=cwd, env=env, capture_output=True)
                    drained(job)

                start = time.perf_counter()
                job = subprocess.run(["sbatch", "--parsable", "--export=PATH,BENCH_API_KEY", str(script)], cwd=cwd, env=env,
                                     capture_output=True, text=True, check=True).stdout.strip()
                label = f"io.primus-runner.slurm-job=raw-{job}"
                try:
                    total, on_nodes = until_all_running(job, label, n, start)
                    raws.append(total), raws_on_nodes.append(on_nodes)
                finally:
                    subprocess.run(["scancel", job], capture_output=True)
                    drained(job)
                    for c in client.api.containers(all=True, filters={"label": label}):
                        client.api.remove_container(c["Id"], force=True)
            print(f"N={n}: submit to all containers running: {', '.join(f'{t:.2f}' for t in ours)} s; "
                  f"sbatch+srun docker run: {', '.join(f'{t:.2f}' for t in raws)} s", flush=True)
            medians[n] = (statistics.median(ours), statistics.median(raws), statistics.median(ours_on_nodes), statistics.median(raws_on_nodes),
                          min(ours_on_nodes), min(raws_on_nodes))
            compare(f"submit -> {n} containers running", ours, raws, "sbatch + srun docker run", scale=1, unit="s")
            compare(f"job RUNNING -> {n} containers running", ours_on_nodes, raws_on_nodes, "sbatch + srun docker run")
    if len(sizes) > 1:
        # The fastest run of each N as well: Slurm adds about a second to some runs of either side
        # (a step launch retried), which moves the medians by more than the nodes do.
        for what, ours_at, raw_at in (("submit", 0, 1), ("job RUNNING", 2, 3), ("job RUNNING (fastest run)", 4, 5)):
            for lo in sorted({sizes[0], sizes[1]}):
                hi = sizes[-1]
                per_ours = (medians[hi][ours_at] - medians[lo][ours_at]) / (hi - lo)
                per_raw = (medians[hi][raw_at] - medians[lo][raw_at]) / (hi - lo)
                print(f"{what} -> all running, per added node (N={lo}..{hi}): primus-runner {per_ours * 1000:+.0f} ms/node, "
                      f"sbatch + srun docker run {per_raw * 1000:+.0f} ms/node", flush=True)
    else:
        print(f"submit: the cluster has {have} node(s); start more with NODES=8 bash .ci/setup-engines.sh", flush=True)


def bench_node_agent() -> None:
    """What the runner adds on every Slurm node: one node agent (started as the batch script's `srun` starts
    it, `agent_command`) running `true` in a container, beside the interpreter's own `python -P -c pass` and
    the `docker run --rm` it replaces, interleaved, median of BENCH_AGENT_RUNS (default 10). CPU is each
    process's own (with its children): the engine daemon's work is the same on both sides and not counted.
    Needs Docker only: the agent is started by hand, with the environment Slurm gives it."""
    import hashlib
    import json

    sys.path.insert(0, str(REPO))
    from runner.config import load_config
    from runner.config.envfile import EnvFile
    from runner.engines.slurm import script
    from runner.engines.slurm.flags import SlurmFlags
    from runner.plan import LaunchFlags, build_plan

    runs = int(os.environ.get("BENCH_AGENT_RUNS", "10"))
    env = _installed_env(BENCH_API_KEY="bench-secret-value-0123456789")
    with tempfile.TemporaryDirectory(dir="/tmp") as cwd:
        work = Path(cwd)
        (work / ".primus.yaml").write_text(_SUBMIT_CONFIG)
        config = load_config(str(work / ".primus.yaml"), user_files=False)  # the file as `submit --config` reads it
        per_node = [(n, "(per node)") for n in script.COMPUTED]
        plan = build_plan(config, ["true"], env, EnvFile(None), LaunchFlags(gpu="none"), extra_env=per_node).require()
        text = json.dumps(script.plan_document(plan, script.settings_from(config, SlurmFlags(nodes=1)), work), indent=2)
        (work / "plan.json").write_text(text)
        carried = {script.carried(k): v for k, v in env.items()}  # the job's values as Slurm gives them to the step
        node_env = dict(env, **carried, SLURM_NODEID="0", SLURM_NNODES="1", SLURMD_NODENAME="bench", PRIMUS_MASTER_NODEADDR="127.0.0.1",
                        PRIMUS_RUNNER_PLAN_SHA256=hashlib.sha256(text.encode()).hexdigest())
        agent = [*script.agent_command(), "node-agent", str(work / "plan.json")]
        python = [sys.executable, "-P", "-c", "pass"]
        docker = ["docker", "run", "--rm", "--network", "host", "--ipc", "host", BUSYBOX, "true"]
        sides = {"agent": ([], []), "python": ([], []), "docker": ([], [])}
        for i in range(runs + 1):  # the first round warms caches and is not counted
            for name, cmd, kw in (("agent", agent, {"env": dict(node_env, SLURM_JOB_ID=str(990000 + i))}),
                                  ("python", python, {"env": env}), ("docker", docker, {"env": env})):
                wall, cpu = _cpu_timed(cmd, cwd=cwd, **kw)
                if i:
                    sides[name][0].append(wall), sides[name][1].append(cpu)
    (agent_wall, agent_cpu), (_, python_cpu), (docker_wall, docker_cpu) = sides["agent"], sides["python"], sides["docker"]
    compare("node agent, CPU", agent_cpu, python_cpu, "python -P -c pass")
    compare("node agent, CPU", agent_cpu, docker_cpu, "docker run --rm (the CLI's own)")
    compare("node agent `true` in a container, wall", agent_wall, docker_wall, "docker run --rm")


def bench_masker() -> None:
    """MaskedStream throughput on a 256 MiB stream in 64 KiB chunks, 20 secrets in scope, vs a plain copy."""
    import secrets as _secrets

    sys.path.insert(0, str(REPO))
    from runner.secrets import Masker

    total, chunk_size = 256 << 20, 64 << 10
    values = [f"bench-secret-{i:02d}-{_secrets.token_hex(16)}" for i in range(20)]
    masker = Masker(values)
    # Log-like text with a secret every ~1 MiB, so the masker does real replacements.
    line = b"step 1234 | loss 2.3456 | lr 3.0e-04 | tokens/s 123456 | grad_norm 0.98765 | mem 61.2 GiB\n"
    block = bytearray(line * ((1 << 20) // len(line)))
    block[4096:4096] = values[7].encode()
    data = bytes(block) * (total // len(block) + 1)
    data = data[:total]
    chunks = [data[i:i + chunk_size] for i in range(0, total, chunk_size)]
    runs = 3
    copy_s, mask_s = [], []
    for _ in range(runs):
        sink = bytearray()
        start = time.perf_counter()
        for c in chunks:
            sink += bytes(c)  # a plain copy of each chunk into the output
        copy_s.append(time.perf_counter() - start)
        sink = bytearray()
        stream = masker.stream()
        start = time.perf_counter()
        for c in chunks:
            sink += stream.feed(c)
        sink += stream.flush()
        mask_s.append(time.perf_counter() - start)
        assert not masker.contains_secret(bytes(sink))
    mib = total / (1 << 20)
    copy_rate = mib / statistics.median(copy_s)
    mask_rate = mib / statistics.median(mask_s)
    print(f"masker: {mask_rate:.0f} MB/s ({mask_rate / copy_rate:.2f}x vs raw: plain copy {copy_rate:.0f} MB/s; "
          f"20 secrets = {len(masker._patterns)} patterns, 256 MiB in 64 KiB chunks, median of {runs})", flush=True)


def bench_pull() -> None:
    """The 220 MB three-layer image from the password-protected local registry (.ci/setup-registry.sh),
    removed before every run: `up --pull always -- true` vs `docker pull` + `docker run --rm`, and the runner's
    pull() alone (with its credential lookup) vs `docker pull` alone; interleaved, median of BENCH_PULL_RUNS (5) with min, max."""
    sys.path.insert(0, str(REPO))
    from runner.clients.engine_api import Engine
    from runner.clients.engine_api.pull import pull
    from runner.clients.registry import credentials_for

    fields = dict(line.split("=", 1) for line in Path("/etc/primus-test-registry/credentials").read_text().split())
    image = f"{fields['registry']}/primus-test/big:latest"
    runs = int(os.environ.get("BENCH_PULL_RUNS", "5"))
    with _bench_dir() as cwd, tempfile.TemporaryDirectory() as docker_config:
        # One credential source for every side: a Docker config logged in with the password on stdin.
        env = _installed_env(DOCKER_CONFIG=docker_config)
        subprocess.run(["docker", "login", fields["registry"], "-u", fields["user"], "--password-stdin"],
                       input=fields["password"], text=True, env=env, check=True, capture_output=True)

        def rmi() -> None:
            subprocess.run(["docker", "image", "rm", image], env=env, capture_output=True)

        def ours() -> float:
            start = time.perf_counter()
            pull(Engine(), image, policy="always", credential=credentials_for(image, env.get))
            return time.perf_counter() - start

        up = RUNNER + ["up", "--pull", "always", "--gpu", "none", "--image", image, "--", "true"]
        raw_pull = ["docker", "pull", "-q", image]
        raw_run = ["docker", "run", "--rm", image, "true"]
        ups, raws, pulls, raw_pulls = [], [], [], []
        up_error = None
        try:
            for _ in range(runs):
                rmi()
                raw_pulls += timed(raw_pull, 1, env=env)
                rmi()
                pulls.append(ours())
                rmi()
                raws.append(sum(timed(raw_pull, 1, env=env) + timed(raw_run, 1, env=env)))
                if up_error is None:
                    rmi()
                    start = time.perf_counter()
                    done = subprocess.run(up, env=env, cwd=cwd, capture_output=True, text=True)
                    if done.returncode == 0:
                        ups.append(time.perf_counter() - start)
                    else:
                        up_error = f"exit {done.returncode}: {(done.stderr.strip().splitlines() or [''])[0][:160]}"
        finally:
            rmi()
            subprocess.run(["docker", "logout", fields["registry"]], env=env, capture_output=True)
    compare("pull() 220 MB", pulls, raw_pulls, "docker pull", scale=1, unit="s")
    if ups:
        compare("up --pull always -- true 220 MB", ups, raws, "docker pull + docker run --rm", scale=1, unit="s")
    else:
        print(f"up --pull always: not measured ({up_error}); docker pull + docker run --rm median {statistics.median(raws):.2f} s", flush=True)


def _mlflow_server(workdir: str, artifacts: str = "proxied", env: dict | None = None) -> tuple[str, subprocess.Popen]:
    """A throw-away MLflow server (the suite's /opt/primus-mlflow) on a free loopback port; ``artifacts``:
    "proxied" (served by the server), or a root the client writes to itself (a directory, s3://...)."""
    import socket
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "AWS_"))}, **(env or {})}
    env.update(MLFLOW_DISABLE_TELEMETRY="true", MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false", PYTHONWARNINGS="ignore")
    cmd = ["/opt/primus-mlflow/bin/mlflow", "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
           "--backend-store-uri", f"sqlite:///{workdir}/mlflow.db", "--allowed-hosts", f"127.0.0.1:{port},127.0.0.1"]
    if artifacts == "proxied":
        cmd += ["--serve-artifacts", "--artifacts-destination", f"{workdir}/artifacts"]
    else:
        cmd += ["--no-serve-artifacts", "--default-artifact-root", artifacts]
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    uri = f"http://127.0.0.1:{port}"
    for _ in range(360):
        try:
            with urllib.request.urlopen(uri + "/health", timeout=2):
                return uri, proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise OSError("the MLflow server did not start")


def _cpu_timed(cmd: list[str], **kwargs) -> tuple[float, float]:
    """(wall s, CPU s of the process and the children it waited for): the CPU figure holds on a loaded host."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = timed(cmd, 1, **kwargs)[0]
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _on_off(label: str, off: list[str], on: list[str], off_env: dict, on_env: dict, cwd: str, runs: int = 5) -> None:
    """``on`` beside ``off``, interleaved (load changes hit both alike), after one warm-up run of each; wall
    time and the runner's own CPU time (the engine's daemon is not counted: the same on both sides)."""
    timed(off, 1, env=off_env, cwd=cwd), timed(on, 1, env=on_env, cwd=cwd)
    offs, ons, off_cpu, on_cpu = [], [], [], []
    for _ in range(runs):
        wall, cpu = _cpu_timed(off, env=off_env, cwd=cwd)
        offs.append(wall), off_cpu.append(cpu)
        wall, cpu = _cpu_timed(on, env=on_env, cwd=cwd)
        ons.append(wall), on_cpu.append(cpu)
    diff = (statistics.median(ons) - statistics.median(offs)) * 1000
    cpu_diff = (statistics.median(on_cpu) - statistics.median(off_cpu)) * 1000
    print(f"{label}: on {spread(ons)}; off {spread(offs)}; on - off {diff:+.0f} ms, "
          f"ratio {statistics.median(ons) / statistics.median(offs):.2f}x; CPU on {spread(on_cpu)}, off {spread(off_cpu)}, "
          f"on - off {cpu_diff:+.0f} ms; load {os.getloadavg()[0]:.1f}", flush=True)


_S3_FLOOR = r"""
import os, sys, time
import boto3
s3 = boto3.client("s3", endpoint_url=os.environ["MLFLOW_S3_ENDPOINT_URL"])
s3.put_object(Bucket=sys.argv[1], Key="floor/job-output.log", Body=b"x\n")
"""


def _mlflow_stores(stack, work: Path, off_env: dict) -> list[tuple[str, dict]]:
    """(store, the environment of `up` with MLflow on) for every store, servers started on ``stack``."""
    sys.path.insert(0, str(REPO / "tests"))
    from secret_stores import isolated_aws_env, start_moto_server

    import signal

    def server(name: str, artifacts: str, env: dict | None = None) -> str:
        (work / name).mkdir()
        uri, proc = _mlflow_server(str(work / name), artifacts, env)
        stack.callback(lambda: (os.killpg(proc.pid, signal.SIGTERM), proc.wait(10)))
        return uri

    proxied = server("proxied", "proxied")
    local = server("local", str(work / "local" / "artifacts"))
    (work / "mlruns").mkdir()
    moto = start_moto_server(work / "moto")
    stack.callback(moto.stop)
    bucket = "bench-artifacts"
    aws = {"MLFLOW_S3_ENDPOINT_URL": moto.url, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_DEFAULT_REGION": "us-east-1", **isolated_aws_env(work)}
    subprocess.run([sys.executable, "-c", f"import boto3; boto3.client('s3', endpoint_url='{moto.url}').create_bucket(Bucket='{bucket}')"],
                   env={**off_env, **aws}, check=True)
    s3 = server("s3", f"s3://{bucket}/mlflow", aws)
    return [
        ("proxied server", {"MLFLOW_TRACKING_URI": proxied}),
        ("server, artifacts in a local directory", {"MLFLOW_TRACKING_URI": local}),
        ("file: tracking URI", {"MLFLOW_TRACKING_URI": (work / "mlruns").as_uri()}),
        # Databricks' MLflow REST API under the same paths, answered by the MLflow server
        ("Databricks REST (token)", {"MLFLOW_TRACKING_URI": "databricks", "DATABRICKS_HOST": proxied, "DATABRICKS_TOKEN": "dapi-bench"}),
        ("server, artifacts in S3 (moto)", {"MLFLOW_TRACKING_URI": s3, **aws, "_bucket": bucket}),
    ]


def bench_mlflow() -> None:
    """`up -- true` with MLflow on (log upload on; the `mlflow` extra installed) beside MLflow off, interleaved,
    median of 5 (min, max), on every store: a proxied server, a server whose artifacts are a local directory, a
    `file:` tracking URI, Databricks' REST API (token), a server with S3 artifacts; and the S3 floor (boto3's own
    import and one put_object in a fresh interpreter, beside `python -c pass`). Also `plan -- true` on the proxied server."""
    import contextlib
    import importlib.util

    extra = "installed" if importlib.util.find_spec("mlflow") is not None else "missing"
    print(f"(the mlflow extra is {extra}; differences are on - off of the medians)", flush=True)
    off_env = dict(os.environ, NO_COLOR="1")
    for name in [k for k in off_env if k.startswith(("MLFLOW_", "DATABRICKS_", "AWS_"))]:
        off_env.pop(name)
    with _bench_dir() as cwd, tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        on_cfg = Path(cwd, "on.yaml")
        on_cfg.write_text(_BENCH_CONFIG + "trackers:\n  framework: generic\n  disable_mlflow: false\n  mlflow_upload_logs: true\n")
        up_off = RUNNER + ["up", "--image", BUSYBOX, "--", "true"]
        up_on = RUNNER + ["--config", str(on_cfg), "up", "--image", BUSYBOX, "--", "true"]
        stores = _mlflow_stores(stack, Path(tmp), off_env)
        for store, env in stores:
            bucket = env.pop("_bucket", None)
            on_env = {**off_env, **env}
            if store == "proxied server":
                _on_off("plan -- true, MLflow on (proxied server)", RUNNER + ["plan", "--", "true"],
                        RUNNER + ["--config", str(on_cfg), "plan", "--", "true"], off_env, on_env, cwd)
            _on_off(f"up -- true, MLflow on ({store})", up_off, up_on, off_env, on_env, cwd)
            if bucket:
                probe = subprocess.run([sys.executable, "-c", _S3_FLOOR, bucket], env=on_env, cwd=cwd, capture_output=True, text=True)
                if probe.returncode:
                    print(f"S3 floor: not measured ({probe.stderr.strip().splitlines()[-1:]})", flush=True)
                    continue
                _on_off("S3 floor: python with boto3 import + client + one put_object vs python -c pass",
                        [sys.executable, "-c", "pass"], [sys.executable, "-c", _S3_FLOOR, bucket], off_env, on_env, cwd)


def bench_wandb() -> None:
    """`up -- true` with W&B on (online with a key, and offline) beside W&B off, median of 5 (min, max): the
    handshake is a run id chosen locally, so the difference is the runner's own work for it."""
    off_env = dict(os.environ, NO_COLOR="1")
    for name in [k for k in off_env if k.startswith(("WANDB_", "MLFLOW_"))]:
        off_env.pop(name)
    with _bench_dir() as cwd:
        on_cfg = Path(cwd, "on.yaml")
        on_cfg.write_text(_BENCH_CONFIG + "trackers:\n  framework: generic\n  disable_wandb: false\n  wandb_project: bench\n")
        up_off = RUNNER + ["up", "--image", BUSYBOX, "--", "true"]
        up_on = RUNNER + ["--config", str(on_cfg), "up", "--image", BUSYBOX, "--", "true"]
        for mode, env in (("online", {"WANDB_API_KEY": "bench-wandb-key"}), ("offline", {"WANDB_MODE": "offline"})):
            _on_off(f"up -- true, W&B on ({mode})", up_off, up_on, off_env, {**off_env, **env}, cwd)


def bench_masker_long() -> None:
    """Building a masker and streaming line-sized writes with one long secret
    in scope (4 KB and 32 KB, e.g. a PEM key); linear, so line rate stays near the short-secret one."""
    import secrets as _secrets
    import tracemalloc

    sys.path.insert(0, str(REPO))
    from runner.secrets import Masker

    line = b"step 1234 | loss 2.3456 | lr 3.0e-04 | tokens/s 123456 | grad_norm 0.98765 | mem 61.2 GiB\n"
    writes = 20_000
    for label, size in (("32 B", 32), ("4 KB", 4 << 10), ("32 KB", 32 << 10)):
        value = _secrets.token_hex(size // 2)
        tracemalloc.start()
        start = time.perf_counter()
        masker = Masker([("BENCH_PRIVATE_KEY", value)])
        build_s = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        stream = masker.stream()
        start = time.perf_counter()
        for _ in range(writes):
            stream.feed(line)
        stream.flush()
        rate = writes / (time.perf_counter() - start)
        print(f"masker, one {label} secret: build {build_s * 1000:.1f} ms, peak {peak / (1 << 20):.1f} MiB; "
              f"{rate:,.0f} line writes/s ({len(masker._patterns)} patterns, longest {masker.max_len} B)", flush=True)


_SM_RAW = """
import os, sys
import boto3
boto3.client("secretsmanager", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1").get_secret_value(SecretId=sys.argv[1])
"""


def bench_secret_refs() -> None:
    """`plan` with `secrets:` references beside `plan` with the same names in the environment, interleaved,
    median of 7 (min, max): one reference of each store alone, then all five together (resolved side by side:
    the cost should be the slowest store's). Beside each, the store's own cost measured raw in the same run
    (`pass show`, the `cmd:` command, boto3's import and one GetSecretValue in a fresh python against
    `python -c pass`)."""
    sys.path.insert(0, str(REPO / "tests"))
    from secret_stores import isolated_aws_env, make_pass_store, remove_pass_store, start_moto_server

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        store = make_pass_store()
        moto = start_moto_server(work / "moto")
        try:
            store.insert("ml/hf", "bench-hf-value\n")
            moto.client().create_secret(Name="bench/wandb", SecretString="bench-wandb-value")
            (work / "token").write_text("bench-file-value\n")
            (work / "token").chmod(0o600)
            names = {"HF_TOKEN": "pass:ml/hf", "WANDB_API_KEY": "aws-sm:bench/wandb", "DATABRICKS_TOKEN": "cmd:echo bench-cmd-value",
                     "MLFLOW_TRACKING_TOKEN": f"file:{work / 'token'}", "GH_TOKEN": "env:OTHER_GH"}
            env = dict(os.environ, NO_COLOR="1", OTHER_GH="bench-gh-value", PRIMUS_RUNNER_TRUST_PROJECT="1",  # the bench wrote the file
                       **store.env, **moto.env, **isolated_aws_env(work))
            plain_env = dict(env, **{n: f"bench-{n.lower()}-value" for n in names})
            plan = RUNNER + ["plan", "--", "true"]

            def project(label: str, refs: dict[str, str]) -> str:
                directory = work / label
                directory.mkdir()
                options = _BENCH_CONFIG + f"    env: [{', '.join(names)}]\n"
                (directory / ".primus.yaml").write_text(("secrets:\n" + "".join(f"  {n}: {r}\n" for n, r in refs.items()) if refs else "") + options)
                return str(directory)

            plain = project("plain", {})
            raw = {"pass": ["pass", "show", "ml/hf"], "cmd": ["sh", "-c", "echo bench-cmd-value"], "file": ["cat", str(work / "token")],
                   "aws-sm": [sys.executable, "-c", _SM_RAW, "bench/wandb"]}
            for name, ref in names.items():
                kind = ref.split(":", 1)[0]
                _refs_beside(f"plan, one {kind}: reference", plan, env, project(kind, {name: ref}), plain_env, plain)
                if kind in raw:
                    base = [sys.executable, "-c", "pass"] if kind == "aws-sm" else ["true"]
                    _refs_beside(f"  the store's own cost raw: {' '.join(raw[kind][:2])}", raw[kind], env, plain, env, plain, base=base)
            _refs_beside("plan, all five references", plan, env, project("all", names), plain_env, plain)
        finally:
            moto.stop()
            remove_pass_store(store)


def _refs_beside(label: str, cmd: list[str], env: dict, cwd: str, plain_env: dict, plain_cwd: str, base: list[str] | None = None,
                 runs: int = 7) -> None:
    """``cmd`` in ``cwd`` beside ``base`` (default: the same command in the project without references)."""
    base = base or cmd
    for argv, e, c in ((cmd, env, cwd), (base, plain_env, plain_cwd)):
        first = subprocess.run(argv, env=e, cwd=c, capture_output=True, text=True)
        if first.returncode:
            print(f"{label}: not measured ({' '.join(argv[-3:])} exited {first.returncode}: {first.stderr.strip()[-300:]})", flush=True)
            return
    ons, offs = [], []
    for _ in range(runs):
        ons += timed(cmd, 1, env=env, cwd=cwd)
        offs += timed(base, 1, env=plain_env, cwd=plain_cwd)
    diff = (statistics.median(ons) - statistics.median(offs)) * 1000
    print(f"{label}: {spread(ons)}; beside {spread(offs)}; difference {diff:+.0f} ms", flush=True)


def spread(times: list[float], unit_scale: float = 1000) -> str:
    """Median with min and max beside it, in ms."""
    ms = sorted(x * unit_scale for x in times)
    return f"median {statistics.median(ms):.1f} ms (min {ms[0]:.1f}, max {ms[-1]:.1f}, n={len(ms)})"


def _scaled_config(kind: str, n: int, tmp: Path) -> tuple[str, dict]:
    """A `.primus.yaml` with n of one input, and the environment it needs."""
    env: dict[str, str] = {}
    if kind == "allowlist":
        names = [f"BENCH_VAR_{i}" for i in range(n)]
        env = {name: f"value-{i}" for i, name in enumerate(names)}
        return "container:\n  gpu: none\n  options:\n    env:\n" + "".join(f"      - {x}\n" for x in names), env
    if kind == "mounts":
        for i in range(n):
            (tmp / f"m{i}").mkdir(exist_ok=True)
        return "container:\n  gpu: none\n  options:\n    volume:\n" + "".join(f"      - {tmp}/m{i}:/mnt/m{i}\n" for i in range(n)), env
    if kind == "devices":
        return "container:\n  gpu: none\n  options:\n    device:\n" + "".join(f"      - /dev/null:/dev/bench{i}\n" for i in range(n)), env
    if kind == "secrets":
        names = [f"BENCH_{i}_TOKEN" for i in range(n)]
        env = {name: f"tok-{i:04d}-" + "x" * 24 for i, name in enumerate(names)}
        return "container:\n  gpu: none\n  options:\n    env:\n" + "".join(f"      - {x}\n" for x in names), env
    if kind == "secret_length":
        env = {"BENCH_LONG_TOKEN": "k" * n}
        return "container:\n  gpu: none\n  options:\n    env: [BENCH_LONG_TOKEN]\n", env
    if kind == "config_bytes":  # a comment block: the file grows, the meaning does not
        return "container:\n  gpu: none\n" + "".join(f"# padding line {i} {'.' * 60}\n" for i in range(n)), env
    raise ValueError(kind)


# each input at 1x, 4x and 16x a realistic size (the allowlist also at 8,000, the size that once took 7 s)
_SCALES = {
    "allowlist": (100, 400, 1600, 8000),
    "secrets": (5, 20, 80),
    "secret_length": (64, 256, 1024, 4096),
    "mounts": (10, 40, 160),
    "devices": (10, 40, 160),
    "config_bytes": (100, 400, 1600),
}


def bench_scaling() -> None:
    """`plan -- true` as each input grows (allowlist, secrets, secret length, mounts, devices, config size),
    and `up` on a job printing one line of growing length (the masked output path): time per unit at
    each size, so a superlinear step shows as a growing per-unit figure. Median of 5, min and max beside it."""
    runs = 5
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("PRIMUS_", "NCCL_", "RCCL_", "GLOO_", "IONIC_", "HIPBLASLT_"))}
    base_env["NO_COLOR"] = "1"
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        empty = tmp / "empty"
        empty.mkdir()
        (empty / ".primus.yaml").write_text("container:\n  gpu: none\n")
        floor_times = timed(RUNNER + ["plan", "--", "true"], runs, env=base_env, cwd=empty)
        floor = statistics.median(floor_times)
        print(f"plan -- true, minimal config: {spread(floor_times)}", flush=True)
        for kind, sizes in _SCALES.items():
            for n in sizes:
                work = tmp / f"{kind}-{n}"
                work.mkdir()
                text, extra = _scaled_config(kind, n, work)
                (work / ".primus.yaml").write_text(text)
                times = timed(RUNNER + ["plan", "--", "true"], runs, env={**base_env, **extra}, cwd=work)
                above = max(statistics.median(times) - floor, 0.0)
                print(f"plan, {kind} = {n}: {spread(times)}; above the minimal config {above * 1000:.1f} ms, "
                      f"{above * 1e6 / n:.1f} us per unit", flush=True)
        _bench_line_length(tmp, base_env, runs)


def _bench_line_length(tmp: Path, env: dict, runs: int) -> None:
    """`up` on a job that prints one line of N MiB (masking on: a secret in scope) vs `docker run` of the same job."""
    work = tmp / "lines"
    work.mkdir()
    env = {**env, "BENCH_LINE_TOKEN": "bench-line-token-value-0123456789"}
    (work / ".primus.yaml").write_text(_BENCH_CONFIG.replace("    privileged: false", "    privileged: false\n    env: [BENCH_LINE_TOKEN]"))
    for mib in (1, 4, 16):
        job = f"head -c {mib << 20} /dev/zero | tr '\\0' a; echo"
        ours = timed(RUNNER + ["up", "--", "sh", "-c", job], runs, env=env, cwd=work)
        raw = timed(["docker", "run", "--rm", BUSYBOX, "sh", "-c", job], runs)
        o, r = statistics.median(ours), statistics.median(raw)
        print(f"up, one {mib} MiB line: {spread(ours)}; docker run {spread(raw)}; ratio {o / r:.2f}x, "
              f"{(o - r) * 1000 / mib:.1f} ms per MiB above raw", flush=True)


def bench_follow_lines() -> None:
    """The Slurm log follower (`logs JOB -f`, `submit --wait`) on one line of 16, 64 and 256 MiB fed in 1 MiB
    pieces, masking on, against a plain join of the same pieces: linear when the per-MiB figure stays flat."""
    sys.path.insert(0, str(REPO))
    from runner.engines.slurm.job_output import RankLines
    from runner.secrets import Masker

    piece = b"#" * (1 << 20)
    for mib in (16, 64, 256):
        start = time.process_time()
        b"".join([b"0: "] + [piece] * mib)
        raw = time.process_time() - start
        seen: list[int] = []
        lines = RankLines(Masker(["canary-bench-secret-123456"]), lambda text: seen.append(len(text)), json_lines=False)
        start = time.process_time()
        lines.feed(b"0: ")
        for _ in range(mib):
            lines.feed(piece)
        lines.feed(b"\n")
        ours = time.process_time() - start
        print(f"follow one {mib} MiB line: {ours:.2f} s CPU ({ours * 1000 / mib:.1f} ms per MiB; plain join {raw:.2f} s)", flush=True)


def main(argv: list[str]) -> int:
    benches = {name[len("bench_"):]: fn for name, fn in sorted(globals().items()) if name.startswith("bench_") and callable(fn)}
    chosen = argv or list(benches)
    unknown = [n for n in chosen if n not in benches]
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(benches)}", file=sys.stderr)
        return 2
    for name in chosen:
        print(f"== {name}", flush=True)
        try:
            benches[name]()
        except (subprocess.CalledProcessError, OSError) as exc:
            print(f"{name}: failed: {exc}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
