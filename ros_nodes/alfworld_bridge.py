"""alfworld_bridge: an ALFWorld household behind the subgoal interface.

Serves `ExecuteSubgoal` for text subgoals (the text skills turn each into an admissible command, play it and
read success from the game's answer), publishes every observation with the admissible commands and subgoals
on `text_observation` (latched: a late subscriber gets the current one), and serves `reset_scene`, whose
`task` names a game of the set (its folder) and, when empty, whose `seed` picks one by index.
"""

from __future__ import annotations

from pathlib import Path

from hgpo_msgs.action import ExecuteSubgoal
from hgpo_msgs.msg import TextObservation as TextObservationMsg
from hgpo_msgs.srv import ResetScene
from rclpy.action import ActionServer, CancelResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile

from ros_nodes.node_main import Parameters, log_outcome, run_node
from ros_nodes.waiting import RESULT_KEPT_S
from sim.alfworld import (
    AlfworldTextEnv,
    GameEntry,
    GameFileError,
    TextObservation,
    admissible_subgoals,
    discover_games,
    execute_subgoal,
    official_split,
)
from sim.subgoal import Subgoal

LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)


class AlfworldBridge(Node):
    def __init__(self) -> None:
        super().__init__("alfworld_bridge")
        p = Parameters(self)
        games = p(
            "games", "", "game folder (searched recursively); empty = $ALFWORLD_DATA/json_2.1.1/valid_unseen"
        )
        game = p("game", "", "game played at start (its folder in the set); empty = the one at `seed`")
        seed = p.seed("seed", "index of the game played at start when `game` is empty")
        max_steps = p("max_steps", 50, "commands per episode before it ends unsolved")
        self.expert = p("expert", True, "run ALFWorld's planner expert and publish its plan (≈0.2 s a step)")
        folder = Path(games) if games else official_split()
        if folder is None:
            raise ValueError("parameter games is empty and ALFWORLD_DATA is unset: say where the games are")
        try:
            self.games = discover_games(folder)
        except GameFileError as err:
            raise ValueError(str(err)) from err
        self.env = AlfworldTextEnv(max_steps=max_steps, expert=self.expert)
        self.obs_pub = self.create_publisher(TextObservationMsg, "text_observation", LATCHED)
        self.create_service(ResetScene, "reset_scene", self._on_reset)
        self._server = ActionServer(
            self,
            ExecuteSubgoal,
            "execute_subgoal",
            execute_callback=self._execute,
            cancel_callback=lambda _goal: CancelResponse.REJECT,  # one command: nothing to stop halfway
            result_timeout=RESULT_KEPT_S,
        )
        entry = self._select(game, seed)
        if isinstance(entry, str):
            raise ValueError(entry)
        self._start(entry)

    def _select(self, name: str, seed: int) -> GameEntry | str:
        """The game named `name`, or the one at index `seed`; an error message when there is none."""
        if not name:
            return self.games[seed % len(self.games)]
        matches = [g for g in self.games if name in (g.name, str(g.folder), str(g.path))]
        if matches:
            return matches[0]
        shown = ", ".join(g.name for g in self.games[:5])
        return f"no game {name!r} in the set of {len(self.games)} (e.g. {shown}); or give an index as seed"

    def _start(self, entry: GameEntry) -> None:
        self.entry = entry
        self.observation = self.env.reset(entry.path)
        self._publish()
        self.get_logger().info(f"game {entry.name} ({entry.task_type}): {self.observation.task!r}")

    def _publish(self) -> TextObservationMsg:
        obs: TextObservation = self.observation
        msg = TextObservationMsg(
            game=self.entry.name,
            task_type=self.entry.task_type,
            task=obs.task,
            text=obs.text,
            admissible_commands=list(obs.admissible_commands),
            admissible_subgoals=[str(s) for s in admissible_subgoals(obs.admissible_commands)],
            expert_plan=list(self.env.expert_plan()) if self.expert else [],
            won=obs.won,
            done=obs.done,
            steps=obs.steps,
        )
        msg.header.stamp = self.get_clock().now().to_msg()
        self.obs_pub.publish(msg)
        return msg

    def _on_reset(self, request: ResetScene.Request, response: ResetScene.Response) -> ResetScene.Response:
        entry = self._select(request.task, request.seed)
        if isinstance(entry, str):
            response.success, response.message = False, entry
            return response
        try:
            self._start(entry)
        except GameFileError as err:  # the file changed on disk since the set was read
            response.success, response.message = False, str(err)
            return response
        response.success, response.task, response.instruction = True, entry.name, self.observation.task
        response.scene.header.stamp = self.get_clock().now().to_msg()
        return response

    def _execute(self, goal_handle: ServerGoalHandle) -> ExecuteSubgoal.Result:
        request = goal_handle.request.subgoal
        subgoal = Subgoal(request.skill, tuple(request.args))
        outcome = execute_subgoal(self.env, self.observation, subgoal)
        if outcome.observation is not None:
            self.observation = outcome.observation
        self._publish()  # also after a refused subgoal: planners wait for the observation that follows
        log_outcome(self.get_logger(), outcome.success, f"[{request.id}] {subgoal}: {outcome.message}")
        result = ExecuteSubgoal.Result(
            success=outcome.success, message=outcome.message, steps=self.observation.steps
        )
        goal_handle.succeed() if outcome.success else goal_handle.abort()
        return result

    def destroy_node(self) -> None:
        self.env.close()
        super().destroy_node()


def main() -> int:
    return run_node(AlfworldBridge)
