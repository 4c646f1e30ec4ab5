"""The planner node's ALFWorld adapter: observes the alfworld bridge's latched `text_observation` (one per
reset and per subgoal), a game's goal is to win it, and subgoals go to the bridge as text."""

from __future__ import annotations

from hgpo_msgs.msg import Subgoal as SubgoalMsg
from hgpo_msgs.msg import TextObservation as TextObservationMsg
from hgpo_msgs.srv import ResetScene
from rclpy.qos import QoSProfile

from policies.alfworld.domain import AlfworldView
from policies.alfworld.episodes import GameGoal, game_ended, view_of
from policies.planning.domain import Subgoal
from ros_nodes.alfworld_bridge import LATCHED
from sim.alfworld import TextObservation


class AlfworldWorld:
    domain = "alfworld"
    msg_type = TextObservationMsg
    topic = "text_observation"
    qos: QoSProfile | int = LATCHED
    streamed = False
    source = "the alfworld bridge"
    executor = "the alfworld bridge"

    def __init__(self) -> None:
        self._game = ""
        self._room = ""  # the game's text after reset: the prompt's room description

    def accept(self, msg: TextObservationMsg) -> bool:
        return True

    def observation(self, msg: TextObservationMsg) -> AlfworldView:
        if msg.game != self._game:
            self._game, self._room = msg.game, msg.text
        observation = TextObservation(
            text=msg.text,
            task=msg.task,
            admissible_commands=tuple(msg.admissible_commands),
            won=msg.won,
            done=msg.done,
            steps=msg.steps,
        )
        # An empty plan means "done" only once won; otherwise the bridge runs without its expert.
        plan = tuple(msg.expert_plan) if msg.expert_plan or msg.won else None
        return view_of(observation, self._room, plan)

    def after_reset(self, request: ResetScene.Request, response: ResetScene.Response) -> GameGoal:
        self._game = ""  # the next observation starts the game, even when the same game is replayed
        return GameGoal()

    def goal_for(self, instruction: str) -> GameGoal:
        return GameGoal()

    def subgoal_msg(
        self, subgoal: Subgoal, observation: AlfworldView, subgoal_id: int, timeout_s: float
    ) -> SubgoalMsg:
        msg = SubgoalMsg(id=subgoal_id, text=str(subgoal), skill=subgoal.skill, args=list(subgoal.args))
        msg.timeout_s = float(timeout_s)
        return msg

    def ended(self, observation: AlfworldView) -> str | None:
        return game_ended(observation)
