"""The ALFWorld graph over real DDS: the bridge executes text subgoals and resets games; the launch file
plays a game end to end with the planner node (domain:=alfworld) and the expert planner."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("alfworld", reason="ALFWorld tests need the venv built by `make setup`")

from action_msgs.msg import GoalStatus
from hgpo_msgs.action import ExecuteSubgoal
from hgpo_msgs.msg import Subgoal, TextObservation
from hgpo_msgs.srv import ResetScene

from ros_nodes.alfworld_bridge import LATCHED
from ros_nodes.waiting import wait_for
from sim.alfworld import discover_games, parse_subgoal
from tests.alfworld_games import generated_game_set
from tests.ros.conftest import Launched
from tests.ros.helpers import DISCOVERY_S, ActionCall, wait_until

GAME_TIMEOUT_S = 240.0


@pytest.fixture(scope="module")
def games(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generated_game_set(tmp_path_factory)


@pytest.fixture(scope="module")
def bridge(games: Path, ros_env: dict[str, str]) -> Iterator[Launched]:
    launched = Launched(["alfworld", f"games:={games}", "run_task:=false"], ros_env)
    yield launched
    assert launched.stop(timeout=20) == 0, launched.output


class Observations:
    def __init__(self, node) -> None:
        self.received: list[TextObservation] = []
        node.create_subscription(TextObservation, "/hgpo/text_observation", self.received.append, LATCHED)

    def next_after(self, count: int) -> TextObservation:
        wait_until(lambda: len(self.received) > count, DISCOVERY_S, "a new TextObservation")
        return self.received[-1]


def _execute(node, skill: str, *args: str) -> tuple[int, ExecuteSubgoal.Result]:
    goal = ExecuteSubgoal.Goal(
        subgoal=Subgoal(text=f"{skill}({', '.join(args)})", skill=skill, args=list(args))
    )
    return ActionCall(node, ExecuteSubgoal, "/hgpo/execute_subgoal", goal).result(DISCOVERY_S)


def test_bridge_executes_subgoals_and_resets(bridge: Launched, games: Path, test_node) -> None:
    observations = Observations(test_node)
    first = observations.next_after(0)  # latched: the game played at start
    assert first.task and first.admissible_subgoals and first.expert_plan and not first.won

    target = discover_games(games)[3]
    client = test_node.create_client(ResetScene, "/hgpo/reset_scene")
    assert client.wait_for_service(timeout_sec=DISCOVERY_S)
    count = len(observations.received)
    response = wait_for(client.call_async(ResetScene.Request(task=target.name)), DISCOVERY_S, "reset")
    assert response.success and response.task == target.name and response.instruction
    observation = observations.next_after(count)
    assert observation.game == target.name and observation.steps == 0

    subgoal = parse_subgoal(observation.admissible_subgoals[0])
    count = len(observations.received)
    status, result = _execute(test_node, subgoal.skill, *subgoal.args)
    assert status == GoalStatus.STATUS_SUCCEEDED and result.success, result.message
    assert observations.next_after(count).steps == 1

    count = len(observations.received)
    status, result = _execute(test_node, "take", "unicorn 1")
    assert status == GoalStatus.STATUS_ABORTED and not result.success and "take" in result.message
    assert observations.next_after(count).steps == 1  # refused: nothing played

    response = wait_for(client.call_async(ResetScene.Request(task="no-such-game")), DISCOVERY_S, "reset")
    assert not response.success and "no-such-game" in response.message
    assert bridge.proc.poll() is None, bridge.output


def test_launch_plays_a_game_end_to_end(games: Path, launch) -> None:
    launched = launch("alfworld", f"games:={games}", "seed:=4")
    code = launched.wait(timeout=GAME_TIMEOUT_S)
    assert code == 0, launched.output
    assert "loading alfworld planner 'expert'" in launched.output and "SUCCESS" in launched.output
