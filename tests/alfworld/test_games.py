"""Generated games: ALFWorld's own format, loadable by AlfredTWEnv, solvable, split without overlap;
bad game files reported by name."""

from __future__ import annotations

import json
import random
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from textworld.envs.pddl.logic import PddlState

from sim.alfworld import (
    TASK_TYPES,
    AlfworldTextEnv,
    GameFileError,
    discover_games,
    make_games,
)
from sim.alfworld.env import plan_survives
from sim.alfworld.generator import sample_game


def test_every_task_type_is_generated(game_set: Path) -> None:
    assert sorted(g.task_type for g in discover_games(game_set)) == sorted(TASK_TYPES)


def test_splits_never_share_a_game(tmp_path: Path) -> None:
    report = make_games(tmp_path, per_type=2, eval_per_type=2, seed=1, task_types=("pick_and_place_simple",))
    assert sum(report.written.values()) == 4
    train, evaluation = discover_games(tmp_path / "train"), discover_games(tmp_path / "valid_unseen")
    problems = {
        split: {json.loads(g.path.read_text())["pddl_problem"].split("\n", 1)[1] for g in games}
        for split, games in (("train", train), ("eval", evaluation))
    }
    assert len(problems["train"]) == len(problems["eval"]) == 2
    assert not problems["train"] & problems["eval"], "a game is in both splits"


def test_games_load_in_alfred_tw_env(game_set: Path) -> None:
    from alfworld.agents.environment.alfred_tw_env import AlfredTWEnv

    config = {
        "env": {"goal_desc_human_anns_prob": 0, "task_types": [1, 2, 3, 4, 5, 6]},
        "dataset": {"eval_ood_data_path": str(game_set), "num_eval_games": -1},
    }
    env = AlfredTWEnv(config, train_eval="eval_out_of_distribution")
    assert sorted(env.game_files) == sorted(str(g.path) for g in discover_games(game_set))


def test_games_vary(game_set: Path) -> None:
    """Rooms of several kinds, closed containers on the way (the walkthroughs are replayed to a win in
    test_skills, and the expert plays every game in test_alfworld_cli)."""
    rooms, opened, objects = set(), 0, set()
    for game in discover_games(game_set):
        data = json.loads(game.path.read_text())
        assert data["solvable"] and data["walkthrough"]
        opened += any(c.startswith("open ") for c in data["walkthrough"])
        traj = json.loads((game.folder / "traj_data.json").read_text())
        rooms.add(traj["scene"]["room"])
        objects.add(traj["pddl_params"]["object_target"])
    assert len(rooms) >= 2 and opened >= 1 and len(objects) >= 4, (rooms, opened, objects)


def test_sampling_is_seeded() -> None:
    first = sample_game("pick_heat_then_place_in_recep", random.Random(3), "g")
    again = sample_game("pick_heat_then_place_in_recep", random.Random(3), "g")
    assert first is not None and first == again
    assert first.problem() == again.problem()


def test_unknown_task_type_lists_the_known() -> None:
    with pytest.raises(ValueError, match="pick_and_place_simple"):
        sample_game("juggle", random.Random(0), "g")


def _copy(game_set: Path, tmp_path: Path) -> Path:
    root = tmp_path / "set"
    shutil.copytree(game_set, root)
    return root


def test_missing_game_file_is_named(game_set: Path, tmp_path: Path, text_env: AlfworldTextEnv) -> None:
    root = _copy(game_set, tmp_path)
    victim = discover_games(root)[2].path
    victim.unlink()
    with pytest.raises(GameFileError, match=str(victim)):
        discover_games(root)
    with pytest.raises(GameFileError, match="does not exist"):
        text_env.reset(victim)


@pytest.mark.parametrize("content", ["{not json", '{"pddl_domain": "x"}', "[]"])
def test_corrupt_game_file_is_named(
    game_set: Path, tmp_path: Path, text_env: AlfworldTextEnv, content: str
) -> None:
    root = _copy(game_set, tmp_path)
    victim = discover_games(root)[0].path
    victim.write_text(content)
    with pytest.raises(GameFileError, match=str(victim)):
        discover_games(root)
    with pytest.raises(GameFileError, match=str(victim)):
        text_env.reset(victim)


def test_broken_problem_is_named(game_set: Path, tmp_path: Path, text_env: AlfworldTextEnv) -> None:
    root = _copy(game_set, tmp_path)
    victim = discover_games(root)[0].path
    data = json.loads(victim.read_text())
    data["pddl_problem"] = data["pddl_problem"][: len(data["pddl_problem"]) // 2]
    victim.write_text(json.dumps(data))
    with pytest.raises(GameFileError, match=str(victim)):
        text_env.reset(victim)


def test_empty_or_absent_folder(tmp_path: Path) -> None:
    with pytest.raises(GameFileError, match="make-games"):
        discover_games(tmp_path / "nowhere")
    with pytest.raises(GameFileError, match="no solvable games"):
        discover_games(tmp_path)


def test_environments_in_threads_play_as_they_play_alone(game_set: Path) -> None:
    """Batched planner rollouts play each game in its own thread and environment: loads and commands at
    once (TextWorld's parsers share state; without the lock they fail) give what each game gives alone."""
    games = discover_games(game_set)[:6]

    def play(game: Path) -> list[str]:
        env = AlfworldTextEnv()
        observation = env.reset(game)
        texts = [observation.text]
        for step in range(6):
            observation = env.step(sorted(observation.admissible_commands)[step % 3])
            texts.append(observation.text)
        env.close()
        return texts

    alone = [play(g.path) for g in games]
    with ThreadPoolExecutor(len(games)) as pool:
        for _ in range(2):
            assert list(pool.map(play, [g.path for g in games])) == alone


@pytest.fixture
def fast_downward_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per Fast Downward search (`PddlState.replan`) while the test runs."""
    calls: list[int] = []
    replan = PddlState.replan

    def counted(self: PddlState, infos: object) -> list[str]:
        calls.append(1)
        return replan(self, infos)

    monkeypatch.setattr(PddlState, "replan", counted)
    return calls


def test_expert_plans_again_only_off_its_plan(game_set: Path, fast_downward_calls: list[int]) -> None:
    """Fast Downward is the slow part (tens of seconds a plan on big pick-two problems): a command on the
    plan keeps its rest, one off it gets a new plan that still wins, and every game starts with a plan."""
    env = AlfworldTextEnv(max_steps=50, expert=True)
    for game in discover_games(game_set)[:2]:
        env.reset(game.path)
        plan, planned = env.expert_plan(), len(fast_downward_calls)
        assert len(plan) >= 2
        observation = env.step(plan[0])
        assert env.expert_plan() == plan[1:] and len(fast_downward_calls) == planned
        detour = next(c for c in observation.admissible_commands if c not in plan and c.startswith("examine"))
        observation = env.step(detour)
        assert len(fast_downward_calls) == planned + 1 and env.expert_plan()
        while env.expert_plan():
            observation = env.step(env.expert_plan()[0])
        assert observation.won and len(fast_downward_calls) == planned + 1
    env.close()


def test_a_walk_or_an_unnamed_door_keeps_the_plan(game_set: Path, fast_downward_calls: list[int]) -> None:
    """A searching planner walks and opens receptacles off the plan at every step: while the plan starts with
    a walk, such a detour costs no new Fast Downward search, and the kept plan still wins."""
    env = AlfworldTextEnv(max_steps=50, expert=True)
    doors = 0
    for game in discover_games(game_set):
        observation = env.reset(game.path)
        plan, planned = env.expert_plan(), len(fast_downward_calls)
        assert plan[0].startswith("go to ")
        walk = next(c for c in observation.admissible_commands if c.startswith("go to ") and c != plan[0])
        observation = env.step(walk)
        door = next(
            (
                c
                for c in observation.admissible_commands
                if plan_survives(plan, c) and c.split()[0] in ("open", "close")
            ),
            None,
        )
        if door is not None:
            doors += 1
            env.step(door)
        assert env.expert_plan() == plan and len(fast_downward_calls) == planned
        while env.expert_plan():
            observation = env.step(env.expert_plan()[0])
        assert observation.won and len(fast_downward_calls) == planned
    env.close()
    assert doors, "no game offered a door off the plan: the test no longer covers opening"


@pytest.mark.parametrize(
    ("command", "kept"),
    [
        ("go to shelf 2", True),
        ("open drawer 3", True),
        ("close cabinet 1", True),  # the plan names cabinet 10, not cabinet 1
        ("open fridge 1", False),  # the plan reads whether the fridge is open
        ("take apple 2 from countertop 1", False),
        ("examine shelf 2", False),
    ],
)
def test_plan_survives_only_what_it_cannot_notice(command: str, kept: bool) -> None:
    plan = (
        "go to fridge 1",
        "open fridge 1",
        "take apple 1 from fridge 1",
        "go to cabinet 10",
        "move apple 1 to cabinet 10",
    )
    assert plan_survives(plan, command) is kept
    assert not plan_survives(plan[1:], "go to shelf 2"), (
        "a plan that acts where the agent stands reads where it is"
    )
    assert not plan_survives((), "go to shelf 2")
