"""The planner's written goal (`llm.goal_parse`): every family's goal survives being written and read back,
a goal the scene cannot have is refused saying why, each atom's progress is read from the scene, and the LLM
planner (against a local OpenAI-compatible server, the world outside) asks for the goal once per task, re-asks
an unusable one, and shows it in every decision."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from policies.planner_training.data import load_demos
from policies.planner_training.demos import tabletop_demonstrations
from policies.planning import LLMConfig, PlannerError, PlanningContext, StepRecord
from policies.tabletop.goals import GoalError, PlannerGoal, parse_goal
from policies.worlds import make_planner
from sim.tabletop import Subgoal, TabletopWorld, make_task, task_names
from sim.tabletop.goal import Atom
from tests.fake_llm_api import MODEL, FakeAPI, serve_fake_api


@pytest.fixture(scope="module")
def world() -> TabletopWorld:
    return TabletopWorld()


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    with serve_fake_api() as state:
        yield state


def _planner(api: FakeAPI, **overrides: object):  # type: ignore[no-untyped-def]
    values = {"backend": "openai", "model": MODEL, "base_url": api.url, "timeout_s": 2.0, "goal_parse": True}
    return make_planner("llm", LLMConfig.from_mapping({**values, **overrides}))


@pytest.mark.parametrize("name", task_names("all"))
def test_every_family_goal_is_read_back_as_written(world: TabletopWorld, name: str) -> None:
    for seed in range(3):
        task = make_task(name, seed, split="train")
        goal = PlannerGoal(task.goal, task.forbidden)
        assert parse_goal(str(goal), world.reset(task)) == goal


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("on(purple_block, left_plate)", "no object 'purple_block' in the scene"),
        ("on(left_plate, red_block)", "left_plate is a plate, on wants block"),
        ("under(red_block, left_plate)", "unknown predicate under"),
        ("on(red_block)", "on takes 2 arguments, got 1"),
        ("on(red_block, red_block)", "cannot relate to itself"),
        ("never(fly); on(red_block, left_plate)", "never takes one skill"),
        ("on(red_block, left_plate); on(red_block, left_plate)", "repeats an atom"),
        ("never(pick)", "names no atom"),
        ("put the red block on the plate", "is not of the form"),
        ("", "names no atom"),
    ],
)
def test_a_goal_the_scene_cannot_have_is_refused_saying_why(
    world: TabletopWorld, text: str, reason: str
) -> None:
    with pytest.raises(GoalError, match=reason):
        parse_goal(text, world.reset(make_task("stack", 0)))


def test_each_atom_is_marked_by_whether_it_holds_in_the_scene(world: TabletopWorld) -> None:
    task = make_task("clear_plate", 0)  # green and blue start on the right plate
    state = world.reset(task)
    goal = PlannerGoal((Atom("on", ("green_block", "right_plate")), *task.goal), ("pick",))
    assert goal.render(state).splitlines() == [
        "- on(green_block, right_plate): holds",
        "- on(green_block, left_plate): to do",
        "- on(blue_block, left_plate): to do",
        "- never(pick): do not use pick",
    ]


def test_the_planner_writes_the_goal_once_re_asked_until_usable(api: FakeAPI, world: TabletopWorld) -> None:
    task = make_task("stack", 0)  # stack the blue block on the yellow block
    api.replies = ["on(blue_block, purple_block)", "on(blue_block, yellow_block)", "pick(blue_block)"]
    planner = _planner(api, max_goal_tokens=40)
    state = world.reset(task)
    assert planner.next_subgoal(PlanningContext(task.instruction, state, ())) == Subgoal(
        "pick", ("blue_block",)
    )

    parse, reask, decision = (request["body"] for request in api.requests)
    assert parse["max_tokens"] == 40 and "Goal atoms:" in parse["messages"][1]["content"]
    assert "no object 'purple_block' in the scene" in reask["messages"][-1]["content"]
    assert "Write the goal again" in reask["messages"][-1]["content"]
    assert "- on(blue_block, yellow_block): to do" in decision["messages"][1]["content"]
    trace = planner.last_trace
    assert trace is not None and [a.valid for a in trace.attempts] == [False, True, True]

    api.replies = ["pick(blue_block)"]  # the next decision of the task reuses the goal
    history = (StepRecord(Subgoal("pick", ("blue_block",)), False, "slipped"),)
    planner.next_subgoal(PlanningContext(task.instruction, state, history))
    assert len(api.requests) == 4 and "Goal atoms:" not in api.requests[3]["body"]["messages"][1]["content"]


def test_a_planner_that_never_writes_a_usable_goal_fails_the_step_clearly(
    api: FakeAPI, world: TabletopWorld
) -> None:
    api.replies = ["sure! the blue one", "on(blue_block)", "nothing"]
    planner = _planner(api, max_reasks=2)
    task = make_task("stack", 0)
    with pytest.raises(PlannerError, match=r"no usable goal in 3 answers; the last, 'nothing', was refused"):
        planner.next_subgoal(PlanningContext(task.instruction, world.reset(task), ()))
    assert planner.last_trace is not None and len(planner.last_trace.attempts) == 3


def test_goal_parse_on_a_domain_without_goals_is_a_clear_error(api: FakeAPI) -> None:
    with pytest.raises(ValueError, match="the alfworld domain cannot write a goal"):
        _planner(api, domain="alfworld")


def test_goal_demonstrations_teach_the_goal_first_and_show_it_in_every_decision(tmp_path: Path) -> None:
    path = tmp_path / "demos.jsonl"
    lines = [line for _, records in tabletop_demonstrations(["tower"], [0], goals=True) for line in records]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    task = make_task("tower", 0)
    first, *decisions = lines
    assert first["expert_goal"] == str(PlannerGoal(task.goal))
    assert all("expert_subgoal" in d and "Goal (each atom" in d["messages"][1]["content"] for d in decisions)
    demos = load_demos([path])
    assert [d.skill for d in demos[:2]] == ["goal", "pick"]
