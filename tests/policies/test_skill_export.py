"""`hgpo export-onnx`: numerical parity, the metadata contract, refusal that writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from hgpo.cli import main as hgpo_main
from policies.skills.checkpoint import PolicyInfo, save_actor
from policies.skills.export import ExportRefusedError, export_actor, parity_inputs
from policies.skills.networks import ActorConfig, GoalConditionedActor
from policies.skills.onnx_contract import (
    CONTRACT,
    CONTRACT_VERSION,
    KEY_CONTRACT,
    KEY_VERSION,
    PolicyFileError,
    info_from_metadata,
    metadata_from_info,
)

INFO = PolicyInfo(
    skills=("pick", "place"),
    obs_layout=(("ee_position", 3), ("gripper_width", 1), ("object_position", 3)),
    goal_layout=(("goal_position", 3),),
    action_scale=0.25,
    control_period_s=0.04,
    run_id="20261129-test",
)


@pytest.fixture(scope="module")
def actor() -> GoalConditionedActor:
    torch.manual_seed(0)
    actor = GoalConditionedActor(ActorConfig(obs_dim=7, goal_dim=3, hidden=(64, 64)))
    actor.update_normalizers(torch.randn(500, 7) * 0.2 + 0.4, torch.randn(500, 3) * 0.1)
    with torch.no_grad():  # weights far from their initialization, so parity is not a near-zero comparison
        for param in actor.parameters():
            param.mul_(3.0)
    return actor.eval()


@pytest.fixture(scope="module")
def exported(actor: GoalConditionedActor, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("export")
    save_actor(folder / "actor.pt", actor, INFO)
    assert hgpo_main(["export-onnx", str(folder / "actor.pt"), str(folder / "reach" / "policy.onnx")]) == 0
    return folder / "reach" / "policy.onnx"


def test_onnxruntime_matches_torch_on_any_batch_size(actor: GoalConditionedActor, exported: Path) -> None:
    session = ort.InferenceSession(str(exported), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["obs", "goal"]
    assert [o.name for o in session.get_outputs()] == ["action"]
    obs, goal = parity_inputs(actor, 1000, seed=7)
    with torch.no_grad():
        expected = actor(torch.from_numpy(obs), torch.from_numpy(goal)).numpy()
    for batch in (1, 3, 1000):
        got = session.run(["action"], {"obs": obs[:batch], "goal": goal[:batch]})[0]
        assert got.shape == (batch, 4)
        np.testing.assert_allclose(got, expected[:batch], atol=1e-5, rtol=0)
    assert np.abs(expected).max() > 0.5  # the comparison covers actions far from zero


def test_metadata_carries_the_training_contract(exported: Path) -> None:
    metadata = {p.key: p.value for p in onnx.load(str(exported)).metadata_props}
    assert metadata[KEY_CONTRACT] == CONTRACT and metadata[KEY_VERSION] == str(CONTRACT_VERSION)
    assert json.loads(metadata["obs_layout"]) == [
        ["ee_position", 3],
        ["gripper_width", 1],
        ["object_position", 3],
    ]
    assert info_from_metadata(metadata, "file") == INFO


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({KEY_CONTRACT: "rsl_rl"}, "is not an HGPO skill policy"),
        ({KEY_VERSION: "0"}, "contract version 0, this code reads version 1"),
        ({"obs_layout": "[[1, 2"}, "malformed metadata"),
        ({"obs_layout": '[["a", 0]]'}, "positive lengths"),
        ({"skills": "[]"}, "at least one skill"),
    ],
)
def test_foreign_old_or_malformed_metadata_fails_loudly(change: dict[str, str], message: str) -> None:
    with pytest.raises(PolicyFileError, match=message):
        info_from_metadata({**metadata_from_info(INFO), **change}, "file")


def test_refused_export_writes_nothing_and_keeps_an_existing_file(
    actor: GoalConditionedActor, tmp_path: Path
) -> None:
    with pytest.raises(ExportRefusedError, match="exceeds 0"):
        export_actor(actor, INFO, tmp_path / "policy.onnx", samples=50, tolerance=0.0)
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "policy.onnx").write_bytes(b"previous")
    with pytest.raises(ExportRefusedError):
        export_actor(actor, INFO, tmp_path / "policy.onnx", samples=50, tolerance=0.0)
    assert [p.name for p in tmp_path.iterdir()] == ["policy.onnx"]
    assert (tmp_path / "policy.onnx").read_bytes() == b"previous"


def test_cli_bad_checkpoint_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "actor.pt").write_text("garbage")
    assert hgpo_main(["export-onnx", str(tmp_path / "actor.pt"), str(tmp_path / "out.onnx")]) == 1
    assert "not a readable torch file" in capsys.readouterr().err
    assert not (tmp_path / "out.onnx").exists()
