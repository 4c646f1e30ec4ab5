"""A small real policy file for deployment tests, made in milliseconds: reach as a proportional controller.

The actor's weights are set by hand so that its deterministic action is tanh(gain · (goal − ee_position))
with the gripper open: a real `GoalConditionedActor`, exported by the real exporter and run by onnxruntime,
whose inputs must be read at the right layout positions for the arm to get anywhere. (Training one here,
by behaviour cloning or RL, costs minutes on this machine; the shipped RL policies are tested where they
exist.)
"""

from __future__ import annotations

from pathlib import Path

import onnx
import torch

from policies.skills.checkpoint import PolicyInfo, save_actor
from policies.skills.export import export_actor
from policies.skills.networks import ActorConfig, GoalConditionedActor
from sim.skill_env import GOAL_LAYOUT, OBSERVATION_LAYOUT

GAIN = 10.0  # full speed from 10 cm away


def proportional_reach_actor(gain: float = GAIN) -> GoalConditionedActor:
    obs_dim, goal_dim = len(OBSERVATION_LAYOUT), len(GOAL_LAYOUT)
    actor = GoalConditionedActor(ActorConfig(obs_dim, goal_dim, hidden=(6, 6)))
    first, second, out = (m for m in actor.trunk if isinstance(m, torch.nn.Linear))
    with torch.no_grad():
        for layer in (first, second, out):
            layer.weight.zero_()
            layer.bias.zero_()
        for axis in range(3):  # hidden = relu(+d), relu(-d) with d = goal - ee, so that d = h+ - h-
            ee, goal = OBSERVATION_LAYOUT.index(f"ee_position.{'xyz'[axis]}"), obs_dim + axis
            first.weight[axis, goal], first.weight[axis, ee] = 1.0, -1.0
            first.weight[axis + 3, goal], first.weight[axis + 3, ee] = -1.0, 1.0
        second.weight.copy_(torch.eye(6))
        for axis in range(3):
            out.weight[axis, axis], out.weight[axis, axis + 3] = gain, -gain
        out.bias[3] = -5.0  # gripper open; rows 4..7 (log std) stay 0
    return actor.eval()  # normalizers at mean 0, variance 1: positions pass through unchanged


def write_policy_folder(folder: Path, gain: float = GAIN, skill: str = "reach") -> Path:
    """folder/<skill>/policy.onnx (and its checkpoint actor.pt); returns the folder. A negative gain drives
    the arm away from its goal: a valid file that fails every reach."""
    actor = proportional_reach_actor(gain)
    info = PolicyInfo(
        skills=(skill,),
        obs_layout=tuple((name, 1) for name in OBSERVATION_LAYOUT),
        goal_layout=tuple((name, 1) for name in GOAL_LAYOUT),
        action_scale=0.25,
        control_period_s=0.04,
        run_id="proportional-reach-test",
    )
    save_actor(folder / skill / "actor.pt", actor, info)
    export_actor(actor, info, folder / skill / "policy.onnx")
    return folder


def policy_with_inputs(real_dir: Path, folder: Path, elem_type: int, obs_shape: list) -> Path:
    """folder/reach/policy.onnx with the metadata and names of real_dir's but `elem_type` inputs of
    `obs_shape`, action = tanh(obs[..., :4] + goal[..., :1]) as float32: a file that passes the contract's
    metadata and width checks but cannot run the inputs deployment feeds (float32, rank 2)."""
    real = onnx.load(str(real_dir / "reach" / "policy.onnx"))
    h, tp = onnx.helper, onnx.TensorProto
    nodes = [
        h.make_node("Constant", [], ["starts"], value=h.make_tensor("s", tp.INT64, [1], [0])),
        h.make_node("Constant", [], ["ends"], value=h.make_tensor("e", tp.INT64, [1], [4])),
        h.make_node("Constant", [], ["ends1"], value=h.make_tensor("e1", tp.INT64, [1], [1])),
        h.make_node("Constant", [], ["axis"], value=h.make_tensor("a", tp.INT64, [1], [-1])),
        h.make_node("Slice", ["obs", "starts", "ends", "axis"], ["o4"]),
        h.make_node("Slice", ["goal", "starts", "ends1", "axis"], ["g1"]),
        h.make_node("Add", ["o4", "g1"], ["sum"]),
        h.make_node("Tanh", ["sum"], ["t"]),
        h.make_node("Cast", ["t"], ["action"], to=tp.FLOAT),
    ]
    goal_shape = [*obs_shape[:-1], 3]
    graph = h.make_graph(
        nodes,
        "bad_inputs",
        [
            h.make_tensor_value_info("obs", elem_type, obs_shape),
            h.make_tensor_value_info("goal", elem_type, goal_shape),
        ],
        [h.make_tensor_value_info("action", tp.FLOAT, [*obs_shape[:-1], 4])],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], ir_version=real.ir_version)
    h.set_model_props(model, {p.key: p.value for p in real.metadata_props})
    (folder / "reach").mkdir(parents=True)
    onnx.save(model, str(folder / "reach" / "policy.onnx"))
    return folder
