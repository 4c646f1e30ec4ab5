"""`hgpo train-skills` and `hgpo eval-skills` as users run them: subprocesses of the real entry point."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import yaml

from tests.processes import Captured

REPO = Path(__file__).resolve().parents[2]


def hgpo(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hgpo.cli", *args], cwd=REPO, capture_output=True, text=True, timeout=timeout
    )


def test_train_then_evaluate_a_checkpoint_nominal_and_randomized(tmp_path: Path) -> None:
    train = hgpo(
        "train-skills", "reach", "--runs-dir", str(tmp_path), "--run-name", "smoke", "--env-steps", "200",
        "--num-envs", "2", "--eval-episodes", "2", "--no-progress", "--set", "sac.actor_lr=5e-4",
    )  # fmt: skip
    assert train.returncode == 0, train.stderr
    assert "success" in train.stdout and "smoke" in train.stdout  # the end-of-run table
    saved = yaml.safe_load((tmp_path / "smoke" / "config.yaml").read_text())
    assert saved["sac"]["actor_lr"] == 5e-4 and saved["sac"]["action_l2"] == 1.5  # the siblings stay
    checkpoint = tmp_path / "smoke" / "checkpoints" / "last.pt"
    assert checkpoint.is_file() and (tmp_path / "smoke" / "curves.png").is_file()

    for extra in ([], ["--randomize"], ["--randomize-only", "observation_noise_m"]):
        out = tmp_path / f"eval{len(extra)}.json"
        result = hgpo(
            "eval-skills", "--policy", str(checkpoint), "--skill", "reach", "--episodes", "3",
            "--num-envs", "3", "--json", str(out), *extra,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        record = json.loads(out.read_text())
        assert record["episodes"] == 3 and 0.0 <= record["success_rate"] <= 1.0
        assert record["randomize"] is bool(extra)
        assert record["randomized_knobs"] == {0: [], 1: "all", 2: ["observation_noise_m"]}[len(extra)]
    unknown = hgpo("eval-skills", "--policy", str(checkpoint), "--episodes", "1", "--randomize-only", "wind")
    assert unknown.returncode == 2 and "unknown randomization knob(s) ['wind']" in unknown.stderr


def test_eval_refuses_a_bad_policy_file_and_a_mismatched_skill(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"garbage")
    result = hgpo("eval-skills", "--policy", str(bad), "--skill", "reach", "--episodes", "1")
    assert result.returncode == 1
    assert "not a readable torch file" in result.stderr and "Traceback" not in result.stderr
    missing = hgpo("eval-skills", "--policy", str(tmp_path / "none.pt"), "--episodes", "1")
    assert missing.returncode == 1 and "does not exist" in missing.stderr


def test_train_rejects_an_unknown_config_with_the_known_ones() -> None:
    result = hgpo("train-skills", "no_such_skill")
    assert result.returncode == 2
    assert "no training config" in result.stderr and "reach" in result.stderr


def test_train_rejects_an_unknown_or_malformed_set_with_the_known_keys() -> None:
    typo = hgpo("train-skills", "reach", "--set", "sac.actr_lr=1e-3")
    assert typo.returncode == 2 and "sac: unknown key(s) actr_lr; known:" in typo.stderr
    assert "actor_lr" in typo.stderr and "Traceback" not in typo.stderr
    malformed = hgpo("train-skills", "reach", "--set", "sac.actor_lr")
    assert malformed.returncode == 2 and "write KEY=VALUE" in malformed.stderr


def test_train_rejects_an_unknown_device_without_a_traceback() -> None:
    result = hgpo("train-skills", "reach", "--device", "tpu")
    assert result.returncode == 2
    assert "device must be cpu or cuda" in result.stderr and "Traceback" not in result.stderr


def test_ctrl_c_ends_training_saved_and_says_how_to_resume(tmp_path: Path) -> None:
    """Regression: Ctrl-C printed a KeyboardInterrupt traceback and lost everything since the last
    checkpoint. Now the run ends at the next env step, evaluated and saved, and exits 130."""
    run = tmp_path / "stopped"
    training = Captured(
        [sys.executable, "-m", "hgpo.cli", "train-skills", "reach", "--runs-dir", str(tmp_path), "--run-name",
         "stopped", "--env-steps", "10000000", "--num-envs", "2", "--eval-episodes", "2", "--no-progress"],
        REPO,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not (run / "config.yaml").is_file():  # written once training has begun
            assert training.proc.poll() is None and time.monotonic() < deadline, training.output
            time.sleep(0.05)
        assert training.stop(timeout=120) == 130, training.output
    finally:
        training.stop(timeout=10)
    assert f"continue with: hgpo train-skills --resume {run}" in training.output, training.output
    assert "Traceback" not in training.output and (run / "checkpoints" / "last.pt").is_file()
