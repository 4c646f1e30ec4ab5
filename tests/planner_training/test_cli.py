"""`hgpo train-planner`, `hgpo tabletop-demos` and `--adapter` in the evaluation commands, run in-process
as users call them: outputs, run folders, and bad input that exits 2 saying what was wrong."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest
import torch

from hgpo.cli import main as hgpo
from hgpo.eval_planner import success_interval
from policies.stop_request import StopRequest
from tests.processes import Captured

REPO = Path(__file__).resolve().parents[2]
HGPO = [sys.executable, "-m", "hgpo.cli"]


def test_tabletop_demos_writes_solved_episodes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "demos.jsonl"
    assert hgpo(["tabletop-demos", "--out", str(out), "--tasks", "stack", "--seeds", "1"]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["expert_subgoal"].split("(")[0] for r in records] == ["pick", "place"]
    assert records[1]["history"][0][0] == records[0]["expert_subgoal"]
    assert "wrote 2 records from 1/1" in capsys.readouterr().out


def test_tabletop_demos_learner_rejects_an_unknown_llm_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "dagger.jsonl"
    args = ["tabletop-demos", "--out", str(out), "--learner", "llm", "--set", "temprature=0.5"]
    with pytest.raises(SystemExit) as exit_:
        hgpo(args)
    assert exit_.value.code == 2
    assert "LLM planner settings: unknown key(s) temprature" in capsys.readouterr().err
    assert not out.exists()


def test_tabletop_demos_draw_from_the_training_split(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sim.tabletop.phrasing import PHRASINGS

    out = tmp_path / "demos.jsonl"
    args = ["tabletop-demos", "--out", str(out), "--tasks", "reach", "relational", "--split", "train"]
    assert hgpo([*args, "--seeds", "3"]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    held_out = {p.id for family in PHRASINGS.values() for p in family if p.split == "heldout"}
    assert {r["task"] for r in records} == {"reach", "relational"}
    assert all(r["split"] == "train" and r["phrasing"] not in held_out for r in records)
    assert hgpo(["tabletop-demos", "--out", str(out), "--tasks", "towers"]) == 2
    assert "unknown task 'towers'" in capsys.readouterr().err


def test_eval_planner_on_held_out_compositions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    args = ["eval-planner", "--planner", "expert", "--task", "compositions", "--split", "heldout"]
    assert hgpo([*args, "--episodes", "1", "--skills", "expert", "--run-dir", str(run)]) == 0
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["config"]["split"] == "heldout" and metrics["success_rate"] == 1.0
    low, high = metrics["success_ci95"]  # 5 of 5: the Wilson interval reaches 1 but not down to 0.8
    assert high == pytest.approx(1.0) and 0.5 < low < 0.6
    assert set(metrics["per_task"]) == {"multi_place", "tower", "clear_plate", "swap", "relational"}
    episodes = [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]
    assert all(e["instruction"] for e in episodes)


def test_train_planner_bc_end_to_end(
    tiny_planner_dir: Path, tabletop_demos: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "bc"
    args = ["train-planner", "--algo", "bc", "--model", str(tiny_planner_dir), "--demos", str(tabletop_demos)]
    args += ["--epochs", "1", "--eval-episodes", "1", "--set", "rollout.tasks=[reach]", "--set", "lr=0.01"]
    assert hgpo([*args, "--run-dir", str(run), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "val/loss" in out and "held-out" in out and str(run / "adapter") in out
    summary = json.loads((run / "summary.json").read_text())
    assert summary["evaluation"]["episodes"] == 1 and set(summary["evaluation"]["per_kind"]) == {"reach"}


def test_train_planner_runs_in_one_second_get_their_own_default_folders(
    tiny_planner_dir: Path, tabletop_demos: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default folder is named by the second a run starts; two runs in the same second once shared it,
    and the second resumed from the first one's checkpoint."""
    import hgpo.train_planner as train_planner

    monkeypatch.setattr(train_planner, "REPO", tmp_path)
    monkeypatch.setattr(train_planner, "time_stamp", lambda: "20261206-173423")
    args = ["train-planner", "--algo", "bc", "--model", str(tiny_planner_dir), "--demos", str(tabletop_demos)]
    for _ in range(2):
        assert hgpo([*args, "--epochs", "1", "--eval-episodes", "0", "--no-progress"]) == 0
    runs = tmp_path / "runs" / "planner"
    folders = sorted(f.name for f in runs.iterdir())
    assert folders == ["bc-tabletop-seed0-20261206-173423", "bc-tabletop-seed0-20261206-173423-1"]
    assert all((runs / f / "adapter").is_dir() for f in folders)
    assert hgpo(["train-planner", "--algo", "bc", "--model", str(tiny_planner_dir), "--no-progress"]) == 2
    assert sorted(f.name for f in runs.iterdir()) == folders  # a run that could not start leaves none


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--algo", "bc"], "BC needs demonstrations"),
        (["--algo", "bc", "--demos", "EMPTY"], "holds no records"),
        (["--algo", "bc", "--demos", "BROKEN"], "broken.jsonl:2: not a JSON object"),
        (["--algo", "grpo", "--adapter", "NOADAPTER"], "has no adapter_config.json"),
        (["--algo", "grpo", "--set", "rl.group_size=1"], "group_size must be >= 2"),
        (["--algo", "hgpo", "--set", "rl.depth=3"], "unknown key(s) depth"),
        (["--algo", "bc", "--set", "bc.split=game"], "bc.split must be one of decision, episode"),
        (["--algo", "bc", "--set", "bc.repeat={take: 0}"], "bc.repeat: each count must be a whole number"),
        (["--algo", "bc", "--set", "bc.repeat=take"], "bc.repeat must map skills to counts"),
        (
            ["--algo", "grpo", "--domain", "alfworld", "--set", "rollout.games=NOGAMES"],
            "does not exist: make one with `hgpo alfworld make-games`",
        ),
        (["--algo", "dpo", "--set", "rollout.skill_dir=NOADAPTER"], "no policy files"),
    ],
)
def test_bad_input_exits_2_saying_what_to_fix(
    extra: list[str], message: str, tiny_planner_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "broken.jsonl").write_text('{"messages": [], "expert_subgoal": "done()"}\n{oops\n')
    (tmp_path / "noadapter").mkdir()
    names = {"EMPTY": "empty.jsonl", "BROKEN": "broken.jsonl", "NOADAPTER": "noadapter", "NOGAMES": "nogames"}

    def placed(arg: str) -> str:
        for name, file in names.items():
            arg = arg.replace(name, str(tmp_path / file))
        return arg

    extra = [placed(a) for a in extra]
    run = ["--run-dir", str(tmp_path / "run"), "--no-progress", "--model", str(tiny_planner_dir)]
    assert hgpo(["train-planner", *extra, *run]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "run").exists()  # nothing written for a run that could not start


def test_export_adapter_writes_where_bc_ended_not_its_best_step(
    tiny_planner_dir: Path, tabletop_demos: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Early stopping, as in the run the shipped ALFWorld adapter came from: a learning rate that overshoots
    and patience 1 end the run at its first validation without improvement. adapter/ keeps the step before;
    export-adapter writes the last step, the checkpoint's weights exactly, as a folder the planner loads."""
    from safetensors.torch import load_file

    from policies.planner_training.config import LoraSettings
    from policies.planner_training.model import load_policy

    run, out = tmp_path / "bc", tmp_path / "last"
    args = ["train-planner", "--algo", "bc", "--model", str(tiny_planner_dir), "--demos", str(tabletop_demos)]
    args += ["--epochs", "3", "--eval-episodes", "0", "--set", "lr=1.0", "--set", "bc.validate_every=1"]
    assert hgpo([*args, "--set", "bc.patience=1", "--run-dir", str(run), "--no-progress"]) == 0
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    val = {row["step"]: row["val/loss"] for row in rows if "val/loss" in row}
    last = max(val)
    assert min(val, key=val.__getitem__) < last, val
    assert hgpo(["export-adapter", str(run), str(out)]) == 0
    said = capsys.readouterr().out
    assert f"wrote {out}: the adapter of {run} at its last checkpoint (step {last})" in said
    checkpoint = torch.load(run / "checkpoints" / "last" / "state.pt", weights_only=True)["weights"]
    exported = load_policy(str(tiny_planner_dir), str(out), LoraSettings()).trainable_state()
    assert exported.keys() == checkpoint.keys()
    assert all(torch.equal(exported[name], value) for name, value in checkpoint.items())
    best = load_file(run / "adapter" / "adapter_model.safetensors")
    written = load_file(out / "adapter_model.safetensors")
    assert best.keys() == written.keys() and not all(torch.equal(best[k], written[k]) for k in best)


def test_export_adapter_refuses_what_it_cannot_write(
    tiny_planner_dir: Path, tabletop_demos: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not a run folder, an adapter folder already there, or a config that does not make the checkpoint's
    adapter: exit 2 saying why, and nothing is written."""
    run = tmp_path / "bc"
    args = ["train-planner", "--algo", "bc", "--model", str(tiny_planner_dir), "--demos", str(tabletop_demos)]
    assert hgpo([*args, "--epochs", "1", "--eval-episodes", "0", "--run-dir", str(run), "--no-progress"]) == 0
    capsys.readouterr()
    assert hgpo(["export-adapter", str(tmp_path / "nowhere"), str(tmp_path / "out")]) == 2
    assert "lacks config.yaml or checkpoints/last/state.pt" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    before = {p.name: p.read_bytes() for p in (run / "adapter").iterdir()}
    assert hgpo(["export-adapter", str(run), str(run / "adapter")]) == 2
    assert "exists and is not empty" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in (run / "adapter").iterdir()} == before
    config = run / "config.yaml"
    config.write_text(config.read_text().replace("  r: 8\n", "  r: 4\n"))
    assert hgpo(["export-adapter", str(run), str(tmp_path / "out")]) == 2
    assert "config and checkpoint are from different runs" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_eval_planner_evaluates_an_adapter(
    tiny_planner_dir: Path, tabletop_demos: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from policies.planner_training.config import LoraSettings
    from policies.planner_training.model import load_policy

    load_policy(str(tiny_planner_dir), "", LoraSettings()).save(tmp_path / "adapter")
    run = tmp_path / "eval"
    args = ["eval-planner", "--model", str(tiny_planner_dir), "--task", "reach", "--episodes", "1"]
    args += ["--max-subgoals", "1", "--run-dir", str(run)]
    assert hgpo([*args, "--adapter", str(tmp_path / "adapter"), "--set", "max_new_tokens=24"]) == 0
    decision = json.loads((run / "decisions.jsonl").read_text().splitlines()[0])
    assert decision["trace"]["model"].endswith(f"+lora:{tmp_path / 'adapter'}")
    assert json.loads((run / "config.json").read_text())["llm"]["max_new_tokens"] == 24
    assert hgpo([*args, "--set", "max_new_token=24"]) == 2
    assert "LLM planner settings: unknown key(s) max_new_token" in capsys.readouterr().err
    assert hgpo([*args, "--adapter", str(tmp_path / "missing")]) == 2
    assert "has no adapter_config.json" in capsys.readouterr().err


def test_eval_planner_runs_the_skill_policies_it_is_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The learned skills of `--skill-dir` (a reach file driving the arm away: reach fails), the expert for
    skills without a file; the run config says which ran what; a folder without files exits 2."""
    from tests.skill_policy_files import GAIN, write_policy_folder

    away = write_policy_folder(tmp_path / "away", -GAIN)
    args = ["eval-planner", "--planner", "expert", "--task", "reach", "--episodes", "1"]
    assert hgpo([*args, "--skill-dir", str(away), "--run-dir", str(tmp_path / "onnx")]) == 0
    config = json.loads((tmp_path / "onnx" / "config.json").read_text())
    assert config["skills"]["reach"].startswith(str(away / "reach" / "policy.onnx"))
    assert config["skills"]["pick"] == "expert (fallback: no policy file)"
    assert json.loads((tmp_path / "onnx" / "metrics.json").read_text())["success_rate"] == 0.0
    assert hgpo([*args, "--skills", "expert", "--run-dir", str(tmp_path / "expert")]) == 0
    assert json.loads((tmp_path / "expert" / "metrics.json").read_text())["success_rate"] == 1.0
    (tmp_path / "empty").mkdir()
    assert hgpo([*args, "--skill-dir", str(tmp_path / "empty"), "--run-dir", str(tmp_path / "bad")]) == 2
    assert f"no policy files (<skill>/policy.onnx) in {tmp_path / 'empty'}" in capsys.readouterr().err


def test_alfworld_eval_evaluates_an_adapter(
    tiny_planner_dir: Path, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    pytest.importorskip("alfworld", reason="ALFWorld tests need the venv built by `make setup`")
    from policies.planner_training.config import LoraSettings
    from policies.planner_training.model import load_policy
    from tests.alfworld_games import generated_game_set

    games = generated_game_set(tmp_path_factory)
    load_policy(str(tiny_planner_dir), "", LoraSettings()).save(tmp_path / "adapter")
    out = tmp_path / "eval.json"
    args = ["alfworld", "eval", "--games", str(games), "--planner", "llm", "--model", str(tiny_planner_dir)]
    args += ["--limit", "1", "--max-steps", "2", "--json", str(out)]
    assert hgpo([*args, "--adapter", str(tmp_path / "adapter")]) == 0
    record = json.loads(out.read_text())
    assert record["llm"]["adapter"] == str(tmp_path / "adapter") and record["games"] == 1
    assert hgpo([*args, "--adapter", str(tmp_path / "missing")]) == 2
    assert "has no adapter_config.json" in capsys.readouterr().err


def test_ctrl_c_ends_training_saved_and_the_run_resumes(
    tiny_planner_dir: Path, tabletop_demos: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression: Ctrl-C in a long run printed a KeyboardInterrupt traceback and lost the steps and
    metrics since its last checkpoint. Now it ends after the current step, saved, and says how to resume."""
    run = tmp_path / "bc"
    args = ["--algo", "bc", "--model", str(tiny_planner_dir), "--demos", str(tabletop_demos)]
    args += ["--epochs", "100000", "--eval-episodes", "0", "--set", "bc.validate_every=100000"]
    training = Captured([*HGPO, "train-planner", *args, "--run-dir", str(run), "--no-progress"], REPO)
    try:
        deadline = time.monotonic() + 120
        while not (run / "checkpoints" / "last" / "state.pt").is_file():  # step 0's validation: running
            assert training.proc.poll() is None and time.monotonic() < deadline, training.output
            time.sleep(0.05)
        assert training.stop(timeout=60) == 130, training.output
    finally:
        training.stop(timeout=10)
    assert f"stopped by Ctrl-C; continue with: hgpo train-planner --resume {run}" in training.output
    assert "Traceback" not in training.output
    stopped = json.loads((run / "summary.json").read_text())
    assert stopped["stopped"] and stopped["steps"] >= 1
    logged = [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert logged[-1] == stopped["steps"]  # every step trained was logged
    assert hgpo(["train-planner", "--resume", str(run), "--time-budget-s", "1", "--no-progress"]) == 0
    resumed = json.loads((run / "summary.json").read_text())
    assert resumed["steps"] > stopped["steps"] and not resumed["stopped"]


def test_a_second_ctrl_c_interrupts_at_once() -> None:
    """And the handler before is restored. That one is whatever the suite was started with: SIGINT is
    ignored in a job a script starts in the background, e.g. under nohup."""
    before = signal.getsignal(signal.SIGINT)
    with StopRequest("training") as stop:
        os.kill(os.getpid(), signal.SIGINT)
        assert stop()
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is before


def test_success_interval_is_wilsons() -> None:
    assert success_interval(0, 0) == [0.0, 1.0]
    low, high = success_interval(95, 100)  # the textbook Wilson interval of 95/100
    assert low == pytest.approx(0.8882, abs=1e-4) and high == pytest.approx(0.9785, abs=1e-4)
    low, high = success_interval(0, 100)  # no success seen: still not certain that none would happen
    assert low == 0.0 and high == pytest.approx(0.0370, abs=1e-4)
