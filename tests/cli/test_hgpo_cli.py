"""The `hgpo` command line as users run it: subprocesses of the real entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import imageio.v2 as imageio

REPO = Path(__file__).resolve().parents[2]


def hgpo(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MUJOCO_GL="egl")
    return subprocess.run(
        [sys.executable, "-m", "hgpo.cli", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_help_lists_commands() -> None:
    result = hgpo("--help")
    assert result.returncode == 0
    for command in ("launch", "run-task", "bench"):
        assert command in result.stdout


def test_unknown_command_is_an_error_listing_the_known_ones() -> None:
    result = hgpo("trian-skills")
    assert (
        result.returncode == 2
        and "unknown command 'trian-skills'" in result.stderr
        and "launch" in result.stderr
    )


def _green_caption_pixels(frame) -> int:
    top = frame[:60].astype(int)
    return int(((top[..., 1] > 180) & (top[..., 0] < 170) & (top[..., 2] < 170)).sum())


def test_run_task_in_process_with_a_video(tmp_path: Path) -> None:
    video = tmp_path / "reach.gif"
    args = ("--task", "reach", "--seed", "3", "--planner", "expert", "--skills", "expert")
    result = hgpo("run-task", *args, "--render", str(video))
    assert result.returncode == 0, result.stderr
    assert "SUCCESS: 1 subgoals" in result.stdout and "reach(" in result.stdout
    frames = imageio.mimread(video, memtest=False)
    assert len(frames) > 10 and frames[0].shape == (360, 480, 3)
    assert any((frame != frames[0]).any() for frame in frames[1:])  # the arm moves
    # the first frame comes before any subgoal; the last one says, in green on top, that the task succeeded
    assert _green_caption_pixels(frames[0]) == 0 and _green_caption_pixels(frames[-1]) > 100


def test_run_task_plans_and_acts_as_make_sim_by_default() -> None:
    from hgpo.run_task import _parser

    args = _parser().parse_args([])
    assert (args.planner, args.skills, args.task, args.seed) == ("llm", "onnx", "pick_place", 1)
    assert args.config.name == "planner.yaml" and args.adapter is None  # the node's settings and adapter


def test_run_task_rejects_unknown_names() -> None:
    result = hgpo("run-task", "--task", "juggle")
    assert result.returncode == 2 and "unknown task 'juggle'" in result.stderr
    result = hgpo("run-task", "--render", "out.avi")
    assert result.returncode == 2 and ".gif, .mp4" in result.stderr


def test_bench_sim_prints_a_table_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "sim.json"
    result = hgpo("bench", "sim", "--episodes", "2", "--tasks", "reach", "stack", "--json", str(out))
    assert result.returncode == 0, result.stderr
    assert "real-time factor" in result.stdout and "2/2" in result.stdout
    record = json.loads(out.read_text())
    experts = record["results"]["experts"]
    assert set(experts) == {"reach", "stack"} and experts["stack"]["success_rate"] == 1.0
    assert all(r["real_time_factor"] > 0 for r in record["results"]["world_step"])
