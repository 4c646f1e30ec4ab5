"""The instruction grammar and the composed task families: canonical sentences kept, the held-out split kept
out of training, goals that need every atom, references resolved as the scene shows them."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from sim.tabletop import TASK_GROUPS, TASKS, ExpertPlanner, Subgoal, UnknownTaskError, make_task, task_names
from sim.tabletop.families import _REFERENCES, _TOWERS, combinations, referent
from sim.tabletop.model import BLOCK_SIZE
from sim.tabletop.phrasing import PHRASINGS, REFERENCES, Phrasing, Ref, Tower, phrasings, render

SEEDS = range(300)
Z = BLOCK_SIZE / 2

CANONICAL = {
    ("reach", 0): "move the gripper above the yellow block",
    ("pick_place", 3): "put the yellow block on the left plate",
    ("push", 5): "push the blue block onto the right plate",
    ("stack", 2): "stack the green block on the blue block",
    (
        "sort",
        0,
    ): "sort the blocks: put the yellow block on the left plate and the red, green and blue blocks on "
    "the right plate",
}
"""Sentences the project said for these seeds before the grammar existed (read off commit fadb2ad)."""


@pytest.mark.parametrize(("name", "seed"), sorted(CANONICAL))
def test_canonical_instructions_are_unchanged(name: str, seed: int) -> None:
    task = make_task(name, seed)
    assert task.instruction == CANONICAL[name, seed]
    assert task.phrasing == f"{name}/0" and task.split is None


@pytest.mark.parametrize("name", TASK_GROUPS["templated"])
def test_a_split_changes_the_words_not_the_goal(name: str) -> None:
    for seed in range(20):
        canonical, other = make_task(name, seed), make_task(name, seed, split="heldout")
        assert (canonical.layout, canonical.goal) == (other.layout, other.goal)
        assert canonical.instruction != other.instruction


def _train_texts() -> set[str]:
    return {p.text for family in PHRASINGS.values() for p in family if p.split == "train"}


def test_every_family_has_phrasings_in_both_splits_and_no_template_twice() -> None:
    assert set(PHRASINGS) == set(TASKS)
    texts = [p.text for family in PHRASINGS.values() for p in family]
    assert len(texts) == len(set(texts))
    for name in TASKS:
        assert PHRASINGS[name][0].split == "train"  # the canonical phrasing is a training one
        assert phrasings(name, "train") and phrasings(name, "heldout")


@pytest.mark.parametrize("name", sorted(TASKS))
def test_training_never_draws_a_held_out_phrasing(name: str) -> None:
    held_out = {p.id for p in phrasings(name, "heldout")}
    train_ids = {make_task(name, seed, split="train").phrasing for seed in SEEDS}
    assert not train_ids & held_out
    assert train_ids == {p.id for p in phrasings(name, "train")}  # and every training phrasing is used
    assert {make_task(name, seed, split="heldout").phrasing for seed in SEEDS} == held_out


def test_held_out_sentences_are_never_training_sentences() -> None:
    """Render every training phrasing in every way its words allow: no held-out task's sentence among them."""
    for name in TASKS:
        train = {make_task(name, seed, split="train").instruction for seed in range(2000)}
        for seed in SEEDS:
            task = make_task(name, seed, split="heldout")
            assert task.instruction not in train, f"{name}: {task.instruction!r} is also a training sentence"


@pytest.mark.parametrize("name", TASK_GROUPS["compositions"])
def test_composed_combinations_split_apart(name: str) -> None:
    """A fifth of the combinations is held out; training draws only the rest, evaluation only those."""
    candidates = {
        "tower": _TOWERS,
        "relational": _REFERENCES,
    }.get(name)
    if candidates is not None:
        held, train = (
            set(combinations(name, candidates, "heldout")),
            set(combinations(name, candidates, "train")),
        )
        assert held and train and not held & train and held | train == set(candidates)
    keys = {"train": set(), "heldout": set()}
    for split, seed in itertools.product(keys, SEEDS):
        task = make_task(name, seed, split=split)
        keys[split].add(tuple(sorted(map(str, task.goal))) if name != "tower" else tuple(map(str, task.goal)))
    if name not in ("relational", "clear_plate"):  # their combination is more than the goal's atoms
        assert not keys["train"] & keys["heldout"]


def test_task_groups_and_unknown_names() -> None:
    assert TASK_GROUPS["templated"] == ("reach", "pick_place", "push", "stack", "sort")
    assert set(TASK_GROUPS["compositions"]) == {"multi_place", "tower", "clear_plate", "swap", "relational"}
    assert task_names("all") == tuple(TASKS) and task_names("tower") == ("tower",)
    with pytest.raises(UnknownTaskError, match="compositions"):
        task_names("towers")
    with pytest.raises(ValueError, match="unknown split 'test'"):
        make_task("tower", 0, split="test")  # type: ignore[arg-type]


def test_tower_words_give_the_bottom_up_order() -> None:
    tower = Tower(("yellow_block", "blue_block", "red_block"))
    phrasing = Phrasing("tower", 0, "build a tower: {tower:ontop}", "train")
    assert render(phrasing, {"tower": tower}) == (
        "build a tower: the blue block on the yellow block, then the red block on top"
    )
    assert f"{tower:up}" == "the yellow, blue and red blocks"
    for seed in range(50):
        task = make_task("tower", seed, split="train")
        bottom_up = [task.goal[0].args[1], *(atom.args[0] for atom in task.goal)]
        assert len(bottom_up) in (3, 4) and len(set(bottom_up)) == len(bottom_up)
        for base, atom in zip(bottom_up, task.goal, strict=False):
            assert atom.args[1] == base  # each block on the one below it, in building order


def test_a_composition_needs_every_atom(scene) -> None:
    task = make_task("tower", 0)
    base, middle, top = (task.goal[0].args[1], task.goal[0].args[0], task.goal[1].args[0])
    x, y = 0.5, 0.0
    built = {base: (x, y, Z), middle: (x, y, 3 * Z), top: (x, y, 5 * Z)}
    extra = [atom.args[0] for atom in task.goal[2:]]
    for level, name in enumerate(extra, start=3):
        built[name] = (x, y, (2 * level + 1) * Z)
    assert task.success(scene(blocks=built))
    fallen = {**built, (extra or [top])[-1]: (0.35, 0.2, Z)}  # the top block only on the table
    assert not task.success(scene(blocks=fallen))


def test_expert_sets_aside_a_block_in_the_way(scene) -> None:
    task = make_task("tower", 0)
    base, middle = task.goal[0].args[1], task.goal[0].args[0]
    others = [
        n for n in ("red_block", "green_block", "blue_block", "yellow_block") if n not in (base, middle)
    ]
    blocks = {
        base: (0.5, 0.0, Z),
        others[0]: (0.5, 0.0, 3 * Z),
        middle: (0.4, 0.1, Z),
        others[1]: (0.6, 0.1, Z),
    }
    assert ExpertPlanner().next_subgoal(task, scene(blocks=blocks)) == Subgoal("pick", (others[0],))
    holding = scene(blocks={**blocks, others[0]: (0.5, 0.0, 0.15)}, ee=(0.5, 0.0, 0.15), width=BLOCK_SIZE)
    subgoal = ExpertPlanner().next_subgoal(task, holding)
    assert subgoal is not None and subgoal.skill == "place" and subgoal.args[1].endswith("_plate")


@pytest.mark.parametrize("kind", ["closest", "farthest", "leftmost", "rightmost"])
def test_references_name_the_block_the_scene_shows(kind: str) -> None:
    blocks = {
        "red_block": np.array([0.4, 0.2]),
        "blue_block": np.array([0.5, -0.1]),
        "green_block": np.array([0.6, 0.0]),
    }
    plates = {"left_plate": np.array([0.5, 0.25]), "right_plate": np.array([0.5, -0.25])}
    expected = {
        "closest": "blue_block",
        "farthest": "red_block",
        "leftmost": "red_block",
        "rightmost": "blue_block",
    }
    block, margin = referent(Ref(kind, "right_plate"), blocks, plates)
    assert block == expected[kind] and margin > 0


def test_relational_references_are_unambiguous_and_worded_per_split() -> None:
    heldout_words = re.compile(r"whichever|far left|far right|sitting on")
    for seed in range(60):
        train, held = (
            make_task("relational", seed, split="train"),
            make_task("relational", seed, split="heldout"),
        )
        assert not heldout_words.search(train.instruction)
        assert heldout_words.search(held.instruction), held.instruction
        for task in (train, held):
            block = task.goal[0].args[0]
            plates = [np.array(xy) for xy in task.layout.plates.values()]
            on_plate = [n for n, p in task.layout.blocks.items() if any(p[0] == xy[0] for xy in plates)]
            assert on_plate in ([], [block])  # "the block on the left plate" is the only one there


def test_held_out_words_are_words_no_training_template_uses() -> None:
    """A held-out score measures words the planner never read: these words are the held-out split's alone."""
    held_out_words = re.compile(
        r"\b(nudge|grab|drop|carry|gather|collect|tidy|organise|switch|trade|shift|whichever|far|sitting)\b"
    )
    for family in PHRASINGS.values():
        for phrasing in family:
            if phrasing.split == "train":
                assert not held_out_words.search(phrasing.text), phrasing.id
    for wordings in REFERENCES["train"].values():
        assert not any(held_out_words.search(w) for w in wordings), wordings
    held_out = [p.text for family in PHRASINGS.values() for p in family if p.split == "heldout"]
    held_out += [w for wordings in REFERENCES["heldout"].values() for w in wordings]
    assert {w for text in held_out for w in held_out_words.findall(text)} == set(
        held_out_words.pattern[3:-3].split("|")
    )
