"""The tabletop planning domain: vocabulary, observation text, the valid set and the trie over it."""

from __future__ import annotations

import numpy as np
import pytest

from policies.control import ExpertSkillPolicy, execute_subgoal
from policies.planning import PlanningContext
from policies.planning.constraint import TokenTrie
from policies.planning.parsing import is_well_formed
from policies.tabletop.domain import TabletopDomain
from policies.tabletop.planners import ExpertPlannerBackend
from policies.worlds import WORLDS, make_domain
from sim.tabletop import SKILLS, TASKS, Subgoal, TabletopWorld, check_subgoal, make_task
from sim.tabletop.layout import LayoutRanges
from sim.tabletop.phrasing import Ref


@pytest.fixture(scope="module")
def world() -> TabletopWorld:
    return TabletopWorld()


def test_valid_set_is_what_check_subgoal_accepts_and_an_empty_gripper_allows(world: TabletopWorld) -> None:
    state = world.reset(make_task("sort", 3))
    domain = TabletopDomain()
    valid = domain.valid_subgoals(state)
    assert len(valid) == len(set(valid)) and all(is_well_formed(sg) for sg in valid)
    names = list(state.objects)
    candidates = {
        Subgoal(skill, args)
        for skill in SKILLS
        for args in [(a,) for a in names] + [(a, b) for a in names for b in names]
    }
    accepted = set()
    for subgoal in candidates:
        try:
            check_subgoal(subgoal, state)
            accepted.add(subgoal)
        except ValueError:
            pass
    assert set(valid) == {sg for sg in accepted if sg.skill != "place"}
    # 4 blocks, 2 plates, empty gripper: reach 6, pick 4, push 4*2
    assert len(valid) == 6 + 4 + 8


def test_holding_a_block_allows_only_placing_it(world: TabletopWorld) -> None:
    task = make_task("pick_place", 0)
    world.reset(task)
    obj = task.goal[0].args[0]
    result = execute_subgoal(world, Subgoal("pick", (obj,)), ExpertSkillPolicy(), timeout_s=20.0)
    assert result.success, result.message
    state = world.state()
    domain = TabletopDomain()
    valid = domain.valid_subgoals(state)
    assert valid and all(sg.skill == "place" and sg.args[0] == obj for sg in valid) and len(valid) == 5
    assert f"- gripper: holding {obj}" in domain.render_observation(state)
    assert not domain.finish_allowed(state) and domain.finish_allowed(world.reset(task))
    assert f"place it first, e.g. place({obj}, <target>)" in domain.explain_invalid(
        Subgoal("reach", (obj,)), state
    )


def test_render_observation_and_vocabulary(world: TabletopWorld) -> None:
    state = world.reset(make_task("stack", 0))
    domain = make_domain("tabletop")
    text = domain.render_observation(state)
    for name, obj in state.objects.items():
        assert f"- {name} ({obj.category})" in text
    assert "on the table" in text and "- gripper: empty\n- blocks on the table from left to right: " in text
    signatures = [spec.signature for spec in domain.skills()]
    assert "place(obj: block, target: plate|block)" in signatures and len(signatures) == len(SKILLS)


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_the_scene_orders_name_the_block_a_reference_means(world: TabletopWorld, split: str) -> None:
    """For every spatial reference the families draw, the block it means is first (or last) in the order the
    scene text shows after the world settles, so a planner can read it off."""
    domain = TabletopDomain()
    checked = 0
    for seed in range(40):
        task = make_task("relational", seed, split=split)
        ref = TASKS["relational"].build(np.random.default_rng(seed), LayoutRanges(), split).slots["ref"]
        assert isinstance(ref, Ref)
        text = domain.render_observation(world.reset(task))
        block = task.goal[0].args[0]
        orders = {
            line.split(": ", 1)[0]: line.split(": ", 1)[1].split(", ")
            for line in text.splitlines()
            if line.startswith("- blocks on the table")
        }
        nearest = orders.get(f"- blocks on the table from nearest to farthest from {ref.plate}", [])
        left_to_right = orders.get("- blocks on the table from left to right", [])
        shown = {
            "closest": nearest[:1] == [block],
            "farthest": nearest[-1:] == [block],
            "leftmost": left_to_right[:1] == [block],
            "rightmost": left_to_right[-1:] == [block],
            "on": f"- {block} (block): on {ref.plate}" in text,
        }
        assert shown[ref.kind], (ref, task.instruction, text)
        checked += 1
    assert checked == 40


@pytest.mark.parametrize(
    ("name", "seed"),
    [
        ("reach", 0),
        ("pick_place", 1),
        ("push", 2),
        ("stack", 3),
        ("sort", 4),
        ("clear_plate", 5),
        ("tower", 0),
    ],
)
def test_the_predicted_scene_is_the_one_a_successful_subgoal_leaves(
    world: TabletopWorld, name: str, seed: int
) -> None:
    """A reach, then the expert's plan, executed by the expert skills in MuJoCo: before each subgoal the
    domain predicts the scene text it leaves, and after it succeeds the rendered scene is exactly that."""
    task = make_task(name, seed)
    state = world.reset(task)
    domain = TabletopDomain()
    expert = ExpertPlannerBackend()
    subgoal: Subgoal | None = Subgoal("reach", (list(state.objects)[-1],))
    skills = []
    while subgoal is not None:
        predicted = domain.predict_observation(state, subgoal)
        result = execute_subgoal(world, subgoal, ExpertSkillPolicy(), timeout_s=20.0)
        assert result.success, result.message
        state = world.state()
        assert predicted == domain.render_observation(state), subgoal
        skills.append(subgoal.skill)
        subgoal = expert.next_subgoal(PlanningContext(task.instruction, state, (), task))
    assert task.success(state)
    expected = {"reach"} | ({"push"} if name == "push" else set() if name == "reach" else {"pick", "place"})
    assert set(skills) == expected


def test_a_prediction_changes_only_what_the_subgoal_moves(world: TabletopWorld) -> None:
    state = world.reset(make_task("sort", 4))
    domain = TabletopDomain()
    block = state.names("block")[0]
    now = domain.render_observation(state).splitlines()
    picked = domain.predict_observation(state, Subgoal("pick", (block,)))
    assert picked is not None
    assert f"- {block} (block): held by the gripper" in picked and "- gripper: holding " + block in picked

    def others(lines: list[str]) -> list[str]:
        """What a pick leaves as it was: every line but the block's and the gripper's, the orders less it."""
        return [
            line.replace(f" {block},", "").replace(f", {block}", "")
            for line in lines
            if not line.startswith((f"- {block} ", "- gripper"))
        ]

    assert others(picked.splitlines()) == others(now) and len(others(now)) == len(now) - 2
    assert all(block not in line for line in picked.splitlines() if line.startswith("- blocks on the table"))
    assert domain.predict_observation(state, Subgoal("reach", (block,))) == "\n".join(now)
    assert domain.predict_observation(state, Subgoal("fly", ())) is None


def test_explain_invalid(world: TabletopWorld) -> None:
    state = world.reset(make_task("stack", 0))
    domain = TabletopDomain()
    assert "unknown object 'purple_block'" in domain.explain_invalid(
        Subgoal("pick", ("purple_block",)), state
    )
    assert "must be a block" in domain.explain_invalid(Subgoal("pick", ("left_plate",)), state)
    assert "unknown skill 'fly'" in domain.explain_invalid(Subgoal("fly", ()), state)
    place = Subgoal("place", ("red_block", "left_plate"))
    assert "holds nothing; pick red_block first" in domain.explain_invalid(place, state)


def test_unknown_domain_lists_known() -> None:
    with pytest.raises(ValueError, match="known: " + ", ".join(WORLDS.names)):
        make_domain("kitchen")


def test_trie_allows_only_valid_continuations() -> None:
    trie = TokenTrie([[1, 2], [1, 3, 4], [5]], end_token=0)
    assert sorted(trie.allowed([])) == [1, 5]
    assert sorted(trie.allowed([1])) == [2, 3]
    assert trie.allowed([1, 2]) == [0] and trie.allowed([1, 2, 0]) == []
    assert trie.depth == 4
    with pytest.raises(ValueError, match="leaves the trie"):
        trie.allowed([2])


def test_trie_prefix_of_another_allows_end_and_more() -> None:
    trie = TokenTrie([[1], [1, 2]], end_token=0)
    assert sorted(trie.allowed([1])) == [0, 2]


def test_trie_refuses_empty() -> None:
    with pytest.raises(ValueError, match="no valid continuations"):
        TokenTrie([], end_token=0)
    with pytest.raises(ValueError, match="cannot be empty"):
        TokenTrie([[]], end_token=0)


def test_worlds_are_registered_once_by_exact_name() -> None:
    from policies.planning import World, WorldRegistry
    from policies.tabletop.domain import TabletopDomain

    registry = WorldRegistry()
    registry.register(World("tabletop", TabletopDomain))
    with pytest.raises(ValueError, match="'tabletop' is registered already"):
        registry.register(World("tabletop", TabletopDomain))
    with pytest.raises(ValueError, match="unknown planning domain 'Tabletop'; known: tabletop"):
        registry.make_domain("Tabletop")
    with pytest.raises(ValueError, match="unknown tabletop planner 'expert'; known: llm"):
        registry.make_planner("expert", None, "tabletop")
    assert WORLDS.names == ("alfworld", "tabletop")
