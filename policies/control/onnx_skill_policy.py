"""The `onnx` skill policy backend: learned skills from a folder of exported policy files.

The folder holds one `<skill>/policy.onnx` per learned skill (as `policies/pretrained/skills/` ships them).
Each file is checked at load time against what deployment will feed it — the observation and goal layouts
and version of `sim.skill_env.observation`, and learned-skill names that some planner skill maps to — so a
wrong, old or foreign file stops the controller at start-up instead of steering the arm with nonsense.

A planner skill is served by the file of its learned skill (`sim.skill_env.POLICY_SKILLS`: pick and place
share pick_and_place). A skill with no file is executed by the fallback policy when one is configured
(`fallback_policy: expert`, logged at start-up), otherwise its subgoals fail with a message naming the folder.

Two phases of a subgoal lie outside what a learned skill was trained on, and other skills serve them:
- the approach: push and pick_and_place episodes start with the grip point within 10 cm of the object and
  12-25 cm above the table, while a subgoal may start anywhere (the arm's home is half a metre up; a place on
  a plate nearby ends 3 cm up), so from farther, higher, or low beside the object the learned `reach` (when
  there is one) brings the gripper above the object first;
- the release: pick_and_place learns to carry an object to a point, as Fetch's task does, and never to let
  go, so a place subgoal's last phase (the object held within `LEARNED_RELEASE` of where it rests, or resting
  there) is the scripted expert's, which sets it down, opens the fingers and backs off.

Policies learn goals near where their episodes start (`sim/skill_env/tabletop_skills.py`: reach goals within
15 cm per axis), while a planner's subgoal can lie half a metre away. The policy is fed a waypoint instead:
the point `goal_horizon_m` towards the goal, moving with the arm, until the goal itself is that close.
The learned reach and pick_and_place learned straight lines through free air, so both are steered along the
expert's path (`sim.tabletop.travel_waypoint`: up to the cruise height, across, down): from beside a block
just placed, a straight line to the next one drags the placed block along, and a block carried straight at a
stack's base stops against its side. The path's first leg, the lift-off straight
up from below the heights where reach episodes start (`START_Z`: a place ends with the open fingers around
the block), is the expert's: there the learned reach swerves sideways, pushing the block off its plate.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

import policies
from policies.control.skill_policy import GOAL_HORIZON_M, SkillPolicy
from policies.skills.onnx_contract import PolicyFileError
from policies.skills.onnx_policy import OnnxPolicy
from sim.skill_env import (
    GOAL_LAYOUT,
    OBSERVATION_LAYOUT,
    OBSERVATION_VERSION,
    POLICY_SKILLS,
    policy_inputs,
    skill_action,
)
from sim.skill_env.tabletop_skills import START_Z, TABLETOP_SKILLS, grip_in_start_range
from sim.tabletop import (
    ExpertConfig,
    SceneState,
    Subgoal,
    SubgoalError,
    expert_action,
    obstacle_top,
    releasing,
    travel_waypoint,
)

SHIPPED_MODEL_DIR = Path(policies.__file__).resolve().parent / "pretrained" / "skills"
"""The pretrained policies shipped with the code (also linked as share/hgpo/policies/skills)."""
POLICY_FILE = "policy.onnx"
LEARNED_RELEASE = ExpertConfig(release_tolerance=0.02)
"""Where a place goes over to the expert, and the expert's release tolerance there: a learned carry can park a
block 1-1.5 cm from its goal (its training success radius is 3 cm), or 8 mm above it with the fingers on the
plate under a grasp low on the block, short of the 8 mm at which the expert lets go by default; within 2 cm
the expert sets the block down, opens the fingers and backs off (place on pick_place seeds 1000-1009: 10 of
10, against 3 of 10 at 8 mm)."""


class NoLearnedPolicyError(SubgoalError):
    """A subgoal whose skill has no policy file and no fallback: the subgoal fails, the controller runs on."""


def check_deployable(policy: OnnxPolicy) -> None:
    """PolicyFileError unless the file reads the observation and goal that deployment computes."""
    info, source = policy.info, policy.path
    ours = tuple((name, 1) for name in OBSERVATION_LAYOUT), tuple((name, 1) for name in GOAL_LAYOUT)
    for what, theirs, expected in (
        ("observation", info.obs_layout, ours[0]),
        ("goal", info.goal_layout, ours[1]),
    ):
        if theirs != expected:
            raise PolicyFileError(
                f"{source} was trained on the {what} layout {[n for n, _ in theirs]}, but the controller "
                f"computes {[n for n, _ in expected]}: retrain it on the tabletop (mujoco) skill envs"
            )
    if info.observation_version != OBSERVATION_VERSION:
        raise PolicyFileError(
            f"{source} was trained on observation version {info.observation_version}, the controller "
            f"computes version {OBSERVATION_VERSION}: retrain and re-export it"
        )
    unknown = sorted(set(info.skills) - set(POLICY_SKILLS.values()))
    if unknown:
        raise PolicyFileError(
            f"{source} is for skills {unknown} that no planner skill uses; learned skills: "
            f"{', '.join(sorted(set(POLICY_SKILLS.values())))}"
        )


def load_policy_folder(model_dir: str | os.PathLike[str]) -> dict[str, OnnxPolicy]:
    """learned skill -> its checked policy, from every `*/policy.onnx` under the folder."""
    folder = Path(model_dir)
    if not folder.is_dir():
        raise PolicyFileError(f"policy folder {folder} does not exist (expected <skill>/{POLICY_FILE} files)")
    files = sorted(folder.glob(f"*/{POLICY_FILE}"))
    if not files:
        raise PolicyFileError(
            f"no policy files (<skill>/{POLICY_FILE}) in {folder}: export one with hgpo export-onnx"
        )
    by_skill: dict[str, OnnxPolicy] = {}
    for path in files:
        policy = OnnxPolicy(path)
        check_deployable(policy)
        for skill in policy.info.skills:
            if skill in by_skill:
                raise PolicyFileError(f"two policy files for {skill!r}: {by_skill[skill].path} and {path}")
            by_skill[skill] = policy
    return by_skill


def waypoint(achieved: np.ndarray, goal: np.ndarray, horizon_m: float) -> np.ndarray:
    """`goal`, or the point `horizon_m` from `achieved` towards it if it lies farther (0: always `goal`)."""
    offset = goal - achieved
    distance = float(np.linalg.norm(offset))
    if horizon_m <= 0 or distance <= horizon_m:
        return goal
    return (achieved + offset * (horizon_m / distance)).astype(goal.dtype)


class OnnxSkillPolicy:
    """Learned skills from a policy folder; skills without a file go to `fallback` (or fail without one)."""

    name = "onnx"

    def __init__(
        self,
        model_dir: str | os.PathLike[str],
        fallback: SkillPolicy | None = None,
        goal_horizon_m: float = GOAL_HORIZON_M,
    ) -> None:
        if goal_horizon_m < 0:
            raise ValueError(f"goal_horizon_m must be >= 0 (0: no waypoints), got {goal_horizon_m}")
        self.model_dir = Path(model_dir)
        self.policies: Mapping[str, OnnxPolicy] = load_policy_folder(self.model_dir)
        self.fallback = fallback
        self.goal_horizon_m = goal_horizon_m

    def source(self, planner_skill: str) -> str:
        """What executes a planner skill: a policy file, the fallback, or nothing."""
        policy = self.policies.get(POLICY_SKILLS.get(planner_skill, ""))
        if policy is not None:
            return f"{policy.path} (run {policy.info.run_id or 'unnamed'})"
        return (
            f"{self.fallback.name} (fallback: no policy file)" if self.fallback else "none: its subgoals fail"
        )

    def deployment_differences(self, max_speed: float, control_period_s: float) -> list[str]:
        """Each policy file's training speed and control period that deployment does not match."""
        notes = []
        for policy in {id(p): p for p in self.policies.values()}.values():
            info = policy.info
            if not np.isclose(info.action_scale, max_speed):
                notes.append(
                    f"{policy.path}: trained at {info.action_scale} m/s per full action, run at {max_speed}"
                )
            if not np.isclose(info.control_period_s, control_period_s):
                period = (
                    f"trained at a {info.control_period_s} s control period, run at {control_period_s:g} s"
                )
                notes.append(f"{policy.path}: {period}")
        return notes

    def act(self, subgoal: Subgoal, state: SceneState) -> np.ndarray:
        learned, obs, goal = policy_inputs(subgoal, state)
        policy = self.policies.get(learned)
        if policy is None:
            if self.fallback is None:
                raise NoLearnedPolicyError(
                    f"{subgoal}: no {learned} policy in {self.model_dir} and no fallback policy configured"
                )
            return self.fallback.act(subgoal, state)
        if releasing(subgoal, state, LEARNED_RELEASE, goal):  # a learned carry ends at the resting point
            return expert_action(subgoal, state, LEARNED_RELEASE)
        obj = subgoal.args[0]
        if learned != "reach" and "reach" in self.policies and not grip_in_start_range(state, obj):
            return self.act(Subgoal("reach", (obj,)), state)  # the approach: hover above the object first
        achieved = TABLETOP_SKILLS[learned].achieved(state, obj).astype(np.float32)
        if learned != "push":  # pushes stay on the table
            goal = travel_waypoint(achieved, goal, clear_of=obstacle_top(state))
        lifting_off = achieved[2] < START_Z[0] and np.all(goal[:2] == achieved[:2])  # the path's first leg
        if learned == "reach" and lifting_off:
            return expert_action(subgoal, state)
        return skill_action(learned, policy.act(obs, waypoint(achieved, goal, self.goal_horizon_m)))
