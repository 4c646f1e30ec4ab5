"""Runs started within the same second never share a run folder (two `eval-planner` runs launched together
used to write one folder's episodes.jsonl and config.json at once)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from policies.run_folders import new_run_folder


def test_the_same_name_twice_gives_two_new_folders(tmp_path: Path) -> None:
    first, second = (
        new_run_folder(tmp_path, "20261206-173423-llm"),
        new_run_folder(tmp_path, "20261206-173423-llm"),
    )
    assert (first.name, second.name) == ("20261206-173423-llm", "20261206-173423-llm-1")
    assert first.is_dir() and second.is_dir()


def test_two_eval_planner_runs_in_one_second_keep_their_own_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hgpo.eval_planner as eval_planner

    monkeypatch.setattr(eval_planner, "REPO", tmp_path)
    monkeypatch.setattr(eval_planner, "time_stamp", lambda: "20261206-173423")
    for seed in ("0", "5"):
        args = ["--planner", "expert", "--skills", "expert", "--task", "reach", "--episodes", "1"]
        assert eval_planner.main([*args, "--seed-start", seed]) == 0
    folders = sorted((tmp_path / "runs" / "eval-planner").iterdir())
    assert [f.name for f in folders] == ["20261206-173423-expert", "20261206-173423-expert-1"]
    seeds = [json.loads((f / "episodes.jsonl").read_text())["seed"] for f in folders]
    assert seeds == [0, 5]


def test_two_train_skills_runs_in_one_second_do_not_resume_each_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A train-skills folder with a checkpoint is resumed, so a shared default name made the second run
    continue the first one's training instead of starting its own."""
    import hgpo.train_skills as train_skills

    monkeypatch.setattr(train_skills, "time_stamp", lambda: "20261206-173423")
    args = ["reach", "--runs-dir", str(tmp_path), "--env-steps", "100", "--num-envs", "2"]
    for _ in range(2):
        assert train_skills.main([*args, "--eval-episodes", "1", "--no-progress"]) == 0
    folders = sorted(f.name for f in tmp_path.iterdir())
    assert folders == ["reach-seed0-20261206-173423", "reach-seed0-20261206-173423-1"]
    assert all((tmp_path / f / "checkpoints" / "last.pt").is_file() for f in folders)
    assert train_skills.main(["reach", "--runs-dir", str(tmp_path), "--device", "tpu"]) == 2
    assert sorted(f.name for f in tmp_path.iterdir()) == folders  # a run that could not start leaves none
