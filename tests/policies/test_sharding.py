"""Episodes on Ray workers (policies/sharding.py, `hgpo eval-planner --workers`): the same output as one
process, a worker killed mid-run replaced and its episode played again, errors raised as themselves, and no
Ray at all on the plain path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from operator import eq
from pathlib import Path

import psutil
import pytest

from hgpo.bench.workers import without_timing
from hgpo.cli import main as hgpo
from hgpo.eval_planner import main as eval_planner
from policies.evaluation import TabletopPlayers
from policies.sharding import EpisodesAbandonedError, Workers, WorkersDiedError, episode_runner
from ros_nodes.bag.info import bag_info
from sim.tabletop import UnknownTaskError
from tests.launcher.launcher_testing import wait_until
from tests.ray_workers import Dies, Stalls

REPO = Path(__file__).resolve().parents[2]
JOBS = [(task, seed) for task in ("reach", "pick_place", "stack") for seed in (0, 1)]
EXPERT = TabletopPlayers("expert", None)


def _outcomes(results: list) -> list[tuple]:
    return [(r.task, r.seed, r.success, r.message, r.subgoals, r.steps) for r in results]


@pytest.fixture(scope="module")
def in_process() -> list:
    with episode_runner(EXPERT, None) as play:
        return list(play(JOBS))


def test_two_workers_give_the_results_of_one_process_in_its_order(
    ray_session: None, in_process: list
) -> None:
    with episode_runner(EXPERT, Workers(count=2)) as play:
        assert _outcomes(list(play(JOBS))) == _outcomes(in_process)


def test_a_killed_worker_is_replaced_and_its_episode_played_again(
    ray_session: None, in_process: list, tmp_path: Path
) -> None:
    marker = tmp_path / "died"
    with episode_runner(Dies(EXPERT, partial(eq, JOBS[3]), marker), Workers(count=2)) as play:
        results = list(play(JOBS))
    assert marker.exists(), "a worker process died mid-run"
    assert _outcomes(results) == _outcomes(in_process)  # nothing lost, nothing twice, the same order


def test_a_run_whose_workers_keep_dying_gives_up_saying_so(ray_session: None) -> None:
    dies = Dies(EXPERT, partial(eq, JOBS[0]))
    with (
        pytest.raises(WorkersDiedError, match="2 Ray workers died"),
        episode_runner(dies, Workers(count=1, replacements=1)) as play,
    ):
        list(play(JOBS[:2]))


def test_leaving_the_runner_abandons_the_episodes_another_thread_waits_on(
    ray_session: None, tmp_path: Path
) -> None:
    """A run that ends (Ctrl-C, time budget) while planner RL's next rollouts are in play on the workers
    drops them: the thread waiting on them gets EpisodesAbandonedError, and leaving does not wait for episodes
    that would never end."""
    started = tmp_path / "started"
    with ThreadPoolExecutor(1) as thread:
        with episode_runner(Stalls(started), Workers(count=1)) as play:
            waiting = thread.submit(lambda: list(play([0, 1])))
            wait_until(started.exists, "the worker to start its episode")
            leaving = time.monotonic()
        assert time.monotonic() - leaving < 20
        with pytest.raises(EpisodesAbandonedError, match="2 episodes abandoned"):
            waiting.result(timeout=5)


def test_an_episode_error_is_raised_as_itself(ray_session: None) -> None:
    with episode_runner(EXPERT, Workers(count=2)) as play, pytest.raises(UnknownTaskError, match="juggle"):
        list(play([("reach", 0), ("juggle", 0)]))


def test_eval_planner_json_is_the_same_with_two_workers(
    ray_session: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Metrics, every episode and every decision, in the same order; only clock figures differ. Each
    worker records its episodes (--record): the same files, the same messages."""
    argv = ["--planner", "expert", "--skills", "expert", "--task", "templated", "--episodes", "2"]
    runs = {}
    for name, extra in (("one", []), ("two", ["--workers", "2"])):
        record = ["--record", str(tmp_path / name / "bags")]
        assert eval_planner([*argv, "--run-dir", str(tmp_path / name), *record, *extra]) == 0
        runs[name] = {"bags": {p.name: bag_counts(p) for p in (tmp_path / name / "bags").iterdir()}}
        runs[name] |= {
            file: [
                without_timing(json.loads(line)) for line in (tmp_path / name / file).read_text().splitlines()
            ]
            for file in ("episodes.jsonl", "decisions.jsonl")
        }
        runs[name]["metrics"] = without_timing(json.loads((tmp_path / name / "metrics.json").read_text()))
    assert runs["one"] == runs["two"]
    assert runs["one"]["metrics"]["episodes"] == 10 and len(runs["one"]["decisions.jsonl"]) >= 10
    assert len(runs["one"]["bags"]) == 10


def bag_counts(path: Path) -> dict[str, int]:
    return {topic: info.count for topic, info in bag_info(path).topics.items()}


def test_tabletop_demos_on_two_workers_are_the_records_of_one_process(
    ray_session: None, tmp_path: Path
) -> None:
    argv = ["tabletop-demos", "--tasks", "reach", "stack", "--seeds", "2"]
    outs = [tmp_path / "one.jsonl", tmp_path / "two.jsonl"]
    assert hgpo([*argv, "--out", str(outs[0])]) == 0
    assert hgpo([*argv, "--out", str(outs[1]), "--workers", "2"]) == 0
    assert outs[0].read_text() == outs[1].read_text()
    assert [json.loads(line)["task"] for line in outs[0].read_text().splitlines()] == ["reach"] * 2 + [
        "stack"
    ] * 4


def _ray_processes(temp_dir: str) -> list[psutil.Process]:
    """Processes started by a command run with RAY_TMPDIR=temp_dir (its Ray workers rename themselves, but
    inherit the environment)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("RAY_TMPDIR") == temp_dir:
                found.append(proc)
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return found


def test_plain_path_never_imports_ray_and_workers_leave_no_process_behind(tmp_path: Path) -> None:
    """Two real runs of the command: without --workers Ray is not even imported; with them the command
    starts its own Ray and, once it exits, none of Ray's processes is left."""
    probe = (
        "import sys\nfrom hgpo.eval_planner import main\n"
        "code = main(sys.argv[1:])\nprint('ray imported:', 'ray' in sys.modules)\nsys.exit(code)\n"
    )
    argv = ["--planner", "expert", "--skills", "expert", "--task", "reach", "--episodes", "1"]
    temp_dir = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths live under it
    env = {**os.environ, "RAY_TMPDIR": temp_dir}
    for extra, imported in (([], "False"), (["--workers", "2"], "True")):
        done = subprocess.run(
            [sys.executable, "-c", probe, *argv, "--run-dir", str(tmp_path / f"run{len(extra)}"), *extra],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"ray imported: {imported}" in done.stdout
    assert list(Path(temp_dir).iterdir()), "Ray ran under RAY_TMPDIR"
    left = psutil.wait_procs(_ray_processes(temp_dir), timeout=10)[1]
    assert not left, [p.name() for p in left]
