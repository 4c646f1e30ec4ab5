"""Games in ALFRED's real floor plans: rooms read from the layouts the alfworld package ships, training games
only in seen scenes, evaluation games only in valid_unseen's four, and solvable games of both splits."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
from alfworld.gen import constants

from policies.alfworld.episodes import run_episode
from policies.worlds import make_planner
from sim.alfworld import GRAMMARS, TASK_TYPES, AlfworldTextEnv, discover_games, make_games
from sim.alfworld.floor_plans import LAYOUTS, SEEN_SCENES, UNSEEN_SCENES, floor_plan
from sim.alfworld.generator import sample_game
from sim.alfworld.grammar import rewrite


def test_a_floor_plan_is_its_layout_files() -> None:
    kitchen = floor_plan(10)
    assert kitchen.scene_type == "Kitchen" and kitchen.name == "FloorPlan10"
    # counts from FloorPlan10-openable.json; stove burner, toaster and coffee machine from -objects.json only
    assert kitchen.receptacles == {
        "Cabinet": 3,
        "CounterTop": 3,
        "Drawer": 3,
        "Fridge": 1,
        "GarbageCan": 1,
        "Microwave": 1,
        "Shelf": 3,
        "SinkBasin": 1,
        "CoffeeMachine": 1,
        "StoveBurner": 1,
        "Toaster": 1,
    }
    assert {"Apple", "Mug", "Potato"} <= set(kitchen.object_types)
    assert not {"Window", "LightSwitch", "Faucet", "Sink", "Fridge"} & set(kitchen.object_types)
    assert floor_plan(219).lamps == ("FloorLamp",) and floor_plan(308).lamps == ("DeskLamp",)
    with pytest.raises(ValueError, match="no ALFRED scene 99"):
        floor_plan(99)


def test_seen_and_unseen_scenes_never_meet() -> None:
    assert UNSEEN_SCENES == (10, 219, 308, 424) and not set(SEEN_SCENES) & set(UNSEEN_SCENES)
    assert not set(SEEN_SCENES) & set(constants.TEST_SCENE_NUMBERS)  # ALFRED's held-out test scenes
    assert len(SEEN_SCENES) == 92 and all(floor_plan(s).receptacles for s in SEEN_SCENES + UNSEEN_SCENES)
    assert all((LAYOUTS / f"FloorPlan{s}-openable.json").is_file() for s in UNSEEN_SCENES)


@pytest.mark.parametrize("scenes", [SEEN_SCENES, UNSEEN_SCENES], ids=["seen", "unseen"])
def test_sampled_games_are_furnished_as_their_scene(scenes: tuple[int, ...]) -> None:
    for task_type in TASK_TYPES:
        rng, sampled = random.Random(task_type), 0
        for _ in range(15):
            spec = sample_game(task_type, rng, "game", scenes)
            if spec is None:
                continue
            sampled += 1
            plan = floor_plan(int(spec.room.removeprefix("FloorPlan")))
            assert plan.scene in scenes and plan.scene_type in constants.GOALS_VALID[task_type]
            counts: dict[str, int] = {}
            for _, rtype in spec.receptacles:
                counts[rtype] = counts.get(rtype, 0) + 1
            assert counts == plan.receptacles
            kinds = {otype for _, otype, _ in spec.objects}
            assert kinds - set(plan.lamps) <= set(plan.object_types)
            targets = sum(otype == spec.object_target for _, otype, _ in spec.objects)
            assert 1 <= targets <= constants.PICKUP_REPEAT_MAX
        assert sampled, task_type
    with pytest.raises(ValueError, match="none of the scenes"):
        sample_game("pick_heat_then_place_in_recep", random.Random(0), "game", (219, 308))


def test_floor_plan_games_are_solvable_in_their_split(tmp_path: Path) -> None:
    """A look task (a scene's own lamp) for training and one for evaluation, each solved by the planner."""
    make_games(tmp_path, 1, 1, seed=0, task_types=("look_at_obj_in_light",), floor_plans=True)
    for split, scenes in (("train", SEEN_SCENES), ("valid_unseen", UNSEEN_SCENES)):
        (game,) = discover_games(tmp_path / split)
        scene = json.loads((game.folder / "traj_data.json").read_text())["scene"]
        assert scene["scene_num"] in scenes and scene["floor_plan"] == f"FloorPlan{scene['scene_num']}"
        plan = floor_plan(scene["scene_num"])
        toggle = json.loads((game.folder / "traj_data.json").read_text())["pddl_params"]["toggle_target"]
        assert toggle in plan.lamps
        assert json.loads(game.path.read_text())["solvable"]


def test_the_expert_wins_unseen_scene_games_in_both_grammars(tmp_path: Path) -> None:
    """A look and a pick game in valid_unseen's scenes, written in alfworld 0.2's words and reworded into
    0.4's: ALFWorld's expert, through the text skills, wins all four, and each put is said and answered in
    its game's words."""
    types = ("look_at_obj_in_light", "pick_and_place_simple")
    make_games(tmp_path / "0.2", 0, 1, seed=0, task_types=types, floor_plans=True, grammar="alfworld-0.2")
    for game in discover_games(tmp_path / "0.2"):
        copy = tmp_path / "0.4" / game.name
        shutil.copytree(game.folder, copy)
        data = json.loads(game.path.read_text())
        data["grammar"] = rewrite(data["grammar"], GRAMMARS["alfworld-0.4"], game.path)
        (copy / "game.tw-pddl").write_text(json.dumps(data))
    env, expert = AlfworldTextEnv(max_steps=50, expert=True), make_planner("expert", domain="alfworld")
    try:
        for grammar, folder in (("alfworld-0.2", "0.2"), ("alfworld-0.4", "0.4")):
            games = discover_games(tmp_path / folder)
            assert sorted(g.task_type for g in games) == sorted(types)
            for game in games:
                scene = json.loads((game.folder / "traj_data.json").read_text())["scene"]["scene_num"]
                result = run_episode(env, game, expert, with_expert_plan=True)
                assert scene in UNSEEN_SCENES and game.grammar == grammar
                assert result.won and result.refused == 0, (game.name, result.message)
                puts = [step.message for step in result.history if step.subgoal.skill == "put"]
                assert len(puts) == (game.task_type == "pick_and_place_simple")
                answer = {"alfworld-0.2": "You put the ", "alfworld-0.4": "You move the "}[grammar]
                assert all(put.startswith(answer) for put in puts), puts
    finally:
        env.close()
