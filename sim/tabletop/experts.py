"""Scripted skill experts: reactive controllers that solve one subgoal each.

An expert reads only the current scene and the subgoal, so it picks up wherever an interrupted or
failed attempt left the arm. It returns a normalized action a in [-1, 1]^4: (dx, dy, dz) as a
fraction of the world's max_speed and the gripper command (-1 open, +1 closed);
`action_to_command` is the one conversion to (ee velocity in m/s, gripper width in m).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from sim.tabletop.model import MAX_GRIPPER_WIDTH, TABLE_TOP_Z
from sim.tabletop.predicates import held, on
from sim.tabletop.skills import Subgoal, check_subgoal
from sim.tabletop.state import SceneState
from sim.tabletop.world import WorldConfig

OPEN, CLOSE = -1.0, 1.0
BACK_OFF = np.array([0.0, 0.0, 0.5])
"""Normalized velocity that lifts the gripper clear after a missed grasp or a release."""


@dataclass(frozen=True)
class ExpertConfig:
    """Gains and tolerances of the scripted experts (metres unless said otherwise)."""

    gain: float = 15.0
    """Normalized speed per metre of position error: full speed beyond 1/gain."""
    cruise_height: float = 0.14
    """Height above the table of horizontal moves, clear of stacked blocks."""
    stack_clearance: float = 0.02
    """Horizontal moves also pass this high above their goal point, so a block carried to the top of a tall
    tower does not sweep into it."""
    obstacle_clearance: float = 0.04
    """...and this high above the tallest block top in the scene, so the fingers clear a tower's top."""
    travel_tolerance: float = 0.02
    """Within this horizontal distance of a point, go straight to it instead of via the cruise height."""
    grasp_xy_tolerance: float = 0.012
    grasp_z_tolerance: float = 0.01
    """The grip point must be this close to a block's centre before the fingers close."""
    open_margin: float = 0.015
    """The fingers must be this much wider than a block before they descend around it."""
    release_tolerance: float = 0.008
    """A carried block is let go this close to its resting point."""
    push_speed: float = 0.5
    """Normalized pushing speed."""
    push_gap: float = 0.02
    """Gap between the pusher and the block at the start of a push."""
    push_lateral_tolerance: float = 0.012
    """Largest sideways offset of the pusher from the block's line to its goal while pushing."""
    push_tolerance: float = 0.01
    """Slack on the pusher's distance behind the block and on its height while pushing."""
    finger_half_extent: float = 0.012
    """Half the size of the closed fingers seen from a block (the pusher)."""


def action_to_command(action: np.ndarray, config: WorldConfig) -> tuple[np.ndarray, float]:
    """Normalized action -> (end-effector velocity in m/s, gripper width target in m).

    The speed is capped at max_speed keeping the direction, so a diagonal action is never a command that a
    bridge enforcing that limit (as the sim and arm bridges do) refuses.
    """
    a = np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0)
    velocity = a[:3] * config.max_speed
    speed = float(np.linalg.norm(velocity))
    if speed > config.max_speed:
        velocity *= config.max_speed / speed
    return velocity, float((1.0 - a[3]) / 2.0 * MAX_GRIPPER_WIDTH)


def _toward(point: np.ndarray, goal: np.ndarray, config: ExpertConfig) -> np.ndarray:
    velocity = config.gain * (goal - point)
    speed = float(np.linalg.norm(velocity))
    return velocity / speed if speed > 1.0 else velocity


def obstacle_top(state: SceneState) -> float:
    """Height of the highest top face among the blocks not in the gripper (the table's without any)."""
    tops = [state.objects[n].top_z for n in state.names("block") if not held(state, n)]
    return max(tops, default=TABLE_TOP_Z)


def travel_waypoint(
    point: np.ndarray, goal: np.ndarray, config: ExpertConfig | None = None, clear_of: float = TABLE_TOP_Z
) -> np.ndarray:
    """Where `point` heads next on its way to `goal`: the goal itself when close, else straight up to the
    cruise height, then across at it, so that a move never sweeps through the blocks on the table or a tower
    whose top is at `clear_of` (`obstacle_top`)."""
    config = config or ExpertConfig()
    if np.linalg.norm(goal[:2] - point[:2]) <= config.travel_tolerance:
        return goal
    cruise = max(
        TABLE_TOP_Z + config.cruise_height,
        float(goal[2]) + config.stack_clearance,
        clear_of + config.obstacle_clearance,
    )
    if point[2] < cruise - config.travel_tolerance:
        return np.array([point[0], point[1], cruise], dtype=goal.dtype)
    return np.array([goal[0], goal[1], cruise], dtype=goal.dtype)


def _travel(point: np.ndarray, goal: np.ndarray, config: ExpertConfig, state: SceneState) -> np.ndarray:
    """Velocity bringing `point` to `goal`: straight when close, else up, across at cruise height, down."""
    return _toward(point, travel_waypoint(point, goal, config, obstacle_top(state)), config)


def _action(velocity: np.ndarray, gripper: float) -> np.ndarray:
    return np.array([*velocity, gripper])


def _reach(state: SceneState, goal: np.ndarray, config: ExpertConfig, obj: str) -> np.ndarray:
    return _action(_travel(state.ee_position, goal, config, state), OPEN)


def _grasp(state: SceneState, config: ExpertConfig, obj: str) -> np.ndarray:
    """Approach a block from above with the fingers open and close them around it."""
    ee, target = state.ee_position, state.object(obj)
    grasp = target.position
    width = float(max(target.size[:2]))
    offset = grasp - ee
    if np.hypot(*offset[:2]) <= config.grasp_xy_tolerance and abs(offset[2]) <= config.grasp_z_tolerance:
        if state.gripper_width < 0.5 * width:  # closed on nothing: back off upwards and retry
            return _action(BACK_OFF, OPEN)
        return _action(np.zeros(3), CLOSE)
    velocity = _travel(ee, grasp, config, state)
    if state.gripper_width < width + config.open_margin and offset[2] < 0:
        velocity[2] = 0.0  # wait above the block until the fingers are open
    return _action(velocity, OPEN)


def _pick(state: SceneState, goal: np.ndarray, config: ExpertConfig, obj: str) -> np.ndarray:
    if held(state, obj):
        return _action(_toward(state.object(obj).position, goal, config), CLOSE)
    return _grasp(state, config, obj)


def releasing(
    subgoal: Subgoal, state: SceneState, config: ExpertConfig | None = None, goal: np.ndarray | None = None
) -> bool:
    """Whether a place subgoal is in its last phase, where its expert lets go and backs off. The onnx
    backend hands this phase to the expert, since the learned pick_and_place carries an object to a point
    and never lets go. `goal`: the subgoal's grounding, when the caller has it (grounding a place costs
    about 0.15 ms, a control tick's whole budget at 200 Hz is 5 ms)."""
    if subgoal.skill != "place":
        return False
    if goal is None:
        goal = check_subgoal(subgoal, state).ground(state, *subgoal.args)
    return _releasing(state, goal, config or ExpertConfig(), *subgoal.args)


def _releasing(state: SceneState, goal: np.ndarray, config: ExpertConfig, obj: str, target: str) -> bool:
    """The object rests on the target, or is held within `release_tolerance` of its resting point `goal`."""
    if on(state, obj, target):
        return True
    offset = goal - state.object(obj).position
    near = np.hypot(*offset[:2]) <= config.release_tolerance and abs(offset[2]) <= config.release_tolerance
    return held(state, obj) and bool(near)


def _place(state: SceneState, goal: np.ndarray, config: ExpertConfig, obj: str, target: str) -> np.ndarray:
    if on(state, obj, target):
        return _action(BACK_OFF, OPEN)
    if _releasing(state, goal, config, obj, target):
        return _action(np.zeros(3), OPEN)
    if not held(state, obj):  # dropped or never picked: grasp it again
        return _grasp(state, config, obj)
    position = state.object(obj).position
    return _action(_travel(position, goal, config, state), CLOSE)


def _push(state: SceneState, goal: np.ndarray, config: ExpertConfig, obj: str, plate: str) -> np.ndarray:
    """Keep the closed fingers behind the block on its line to the goal and push along that line."""
    ee, block = state.ee_position, state.object(obj)
    to_goal = goal[:2] - block.position[:2]
    distance = float(np.linalg.norm(to_goal))
    if distance < 1e-9:
        return _action(np.zeros(3), CLOSE)
    direction = to_goal / distance
    side = np.array([-direction[1], direction[0]])
    relative = ee[:2] - block.position[:2]
    along, lateral = float(relative @ direction), float(relative @ side)
    contact = float(max(block.size[:2])) / 2 + config.finger_half_extent
    push_z = block.position[2]
    slack = config.push_tolerance
    behind = -contact - config.push_gap - slack <= along <= -contact + slack
    if behind and abs(lateral) <= config.push_lateral_tolerance and abs(ee[2] - push_z) <= slack:
        speed = min(config.push_speed, config.gain * distance)
        velocity_xy = speed * direction - config.gain * lateral * side
        velocity = np.array([*velocity_xy, config.gain * (push_z - ee[2])])
        return _action(velocity, CLOSE)
    start = block.position[:2] - (contact + config.push_gap) * direction
    return _action(_travel(ee, np.array([*start, push_z]), config, state), CLOSE)


Expert = Callable[..., np.ndarray]
EXPERTS: Mapping[str, Expert] = {"reach": _reach, "pick": _pick, "place": _place, "push": _push}
"""One scripted expert per skill: (state, goal, config, *args) -> normalized action."""


def expert_action(subgoal: Subgoal, state: SceneState, config: ExpertConfig | None = None) -> np.ndarray:
    """The scripted expert's normalized action (4,) in [-1, 1] for a subgoal in the current scene."""
    skill = check_subgoal(subgoal, state)
    goal = skill.ground(state, *subgoal.args)
    action = EXPERTS[subgoal.skill](state, goal, config or ExpertConfig(), *subgoal.args)
    return np.clip(action, -1.0, 1.0)
