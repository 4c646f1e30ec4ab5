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


def _write_like(real_dir: Path, folder: Path, nodes: list, elem_type: int, obs_shape: list) -> Path:
    """folder/reach/policy.onnx: `nodes` from inputs obs, goal to output action, with real_dir's metadata."""
    real = onnx.load(str(real_dir / "reach" / "policy.onnx"))
    h = onnx.helper
    batch = obs_shape[:-1]
    graph = h.make_graph(
        nodes,
        "made_by_hand",
        [
            h.make_tensor_value_info("obs", elem_type, obs_shape),
            h.make_tensor_value_info("goal", elem_type, [*batch, 3]),
        ],
        [h.make_tensor_value_info("action", onnx.TensorProto.FLOAT, [*batch, 4])],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], ir_version=real.ir_version)
    h.set_model_props(model, {p.key: p.value for p in real.metadata_props})
    (folder / "reach").mkdir(parents=True)
    onnx.save(model, str(folder / "reach" / "policy.onnx"))
    return folder


def _constant(name: str, data_type: int, values: list) -> onnx.NodeProto:
    h = onnx.helper
    return h.make_node("Constant", [], [name], value=h.make_tensor(name, data_type, [len(values)], values))


def _tanh_action(nodes: list) -> list:
    """action = tanh(obs[..., :4] + goal[..., :1]) as float32, named "t" (the nodes computing it)."""
    tp = onnx.TensorProto
    return [
        _constant("starts", tp.INT64, [0]),
        _constant("ends", tp.INT64, [4]),
        _constant("ends1", tp.INT64, [1]),
        _constant("axis", tp.INT64, [-1]),
        onnx.helper.make_node("Slice", ["obs", "starts", "ends", "axis"], ["o4"]),
        onnx.helper.make_node("Slice", ["goal", "starts", "ends1", "axis"], ["g1"]),
        onnx.helper.make_node("Add", ["o4", "g1"], ["sum"]),
        onnx.helper.make_node("Tanh", ["sum"], ["tanh"]),
        onnx.helper.make_node("Cast", ["tanh"], ["t"], to=tp.FLOAT),
        *nodes,
    ]


def policy_with_inputs(real_dir: Path, folder: Path, elem_type: int, obs_shape: list) -> Path:
    """A reach file with real_dir's metadata whose inputs are `elem_type` of `obs_shape`: it passes the
    contract's metadata and width checks but cannot run the inputs deployment feeds (float32, rank 2)."""
    nodes = _tanh_action([onnx.helper.make_node("Identity", ["t"], ["action"])])
    return _write_like(real_dir, folder, nodes, elem_type, obs_shape)


def policy_failing_on_real_goals(real_dir: Path, folder: Path) -> Path:
    """A reach file that runs on zero inputs (the start-up test inference) and raises on any real goal:
    it gathers obs[:, 1000 * sum(|goal|)], out of range once the goal is not zero."""
    tp, h = onnx.TensorProto, onnx.helper
    nodes = _tanh_action(
        [
            h.make_node("Abs", ["goal"], ["abs"]),
            h.make_node("ReduceSum", ["abs"], ["total"], keepdims=0),
            _constant("k", tp.FLOAT, [1000.0]),
            h.make_node("Mul", ["total", "k"], ["scaled"]),
            h.make_node("Cast", ["scaled"], ["index"], to=tp.INT64),
            h.make_node("Gather", ["obs", "index"], ["picked"], axis=1),
            _constant("zero", tp.FLOAT, [0.0]),
            h.make_node("Mul", ["picked", "zero"], ["nothing"]),  # (batch, 1): the index has shape (1,)
            h.make_node("Add", ["t", "nothing"], ["action"]),
        ]
    )
    return _write_like(real_dir, folder, nodes, tp.FLOAT, ["batch", 14])
