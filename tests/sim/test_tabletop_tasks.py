"""Task registry and seeded layouts."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from sim.tabletop import TASKS, UnknownTaskError, make_task
from sim.tabletop.layout import LayoutRanges, slot_offsets
from sim.tabletop.model import BLOCKS, PLATE_SIZE, PLATES
from sim.tabletop.tasks import PUSH_CORRIDOR, PUSH_RUN_UP

SEEDS = range(40)
PLATED = ("clear_plate", "swap", "relational")
"""Families whose layouts start blocks on plates."""


def test_registry_has_the_tasks() -> None:
    assert set(TASKS) >= {"reach", "pick_place", "push", "stack", "sort"}
    for name, spec in TASKS.items():
        assert spec.name == name


def test_unknown_task_lists_the_known_ones() -> None:
    with pytest.raises(UnknownTaskError, match=r"'stak'.*pick_place, push, reach, relational, sort, stack"):
        make_task("stak", seed=0)


@pytest.mark.parametrize("name", sorted(TASKS))
def test_same_seed_same_task_other_seed_other_layout(name) -> None:
    a, b, c = make_task(name, 5), make_task(name, 5), make_task(name, 6)
    assert (a.instruction, a.layout, a.goal) == (b.instruction, b.layout, b.goal)
    assert a.layout != c.layout
    assert a.name == name and a.seed == 5 and a.instruction


@pytest.mark.parametrize("split", [None, "train", "heldout"])
@pytest.mark.parametrize("name", sorted(TASKS))
def test_layouts_are_valid(name, split) -> None:
    """Blocks never overlap; a block starts on a plate only in one of its slots, where a family puts it."""
    ranges = LayoutRanges()
    slots = {round(float(offset), 6) for offset in slot_offsets()}
    for seed in SEEDS:
        layout = make_task(name, seed, split=split).layout
        assert set(layout.blocks) == set(BLOCKS) and set(layout.plates) == set(PLATES)
        xy = {block: np.array(pose[:2]) for block, pose in layout.blocks.items()}
        for a, b in itertools.combinations(xy.values(), 2):
            assert np.linalg.norm(a - b) >= ranges.block_spacing
        for block, (x, y, yaw) in layout.blocks.items():
            assert abs(yaw) <= ranges.block_yaw
            plated = [
                (px, py)
                for px, py in layout.plates.values()
                if np.all(np.abs(np.array([x - px, y - py])) <= np.array(PLATE_SIZE[:2]) / 2)
            ]
            if plated:
                ((px, py),) = plated
                assert name in PLATED, f"seed {seed}: {block} starts on a plate"
                assert x == px and round(y - py, 6) in slots, f"seed {seed}: {block} is off the slots"
            else:
                assert (
                    ranges.block_x[0] <= x <= ranges.block_x[1]
                    and ranges.block_y[0] <= y <= ranges.block_y[1]
                )
        assert layout.plates["left_plate"][1] > 0 > layout.plates["right_plate"][1]


def test_push_path_is_clear() -> None:
    for seed in SEEDS:
        task = make_task("push", seed)
        obj, plate = task.goal[0].args
        start = np.array(task.layout.blocks[obj][:2])
        goal = np.array(task.layout.plates[plate])
        direction = (goal - start) / np.linalg.norm(goal - start)
        run_up = start - PUSH_RUN_UP * direction
        path = [run_up + t * (goal - run_up) for t in np.linspace(0, 1, 50)]
        for other, pose in task.layout.blocks.items():
            if other != obj:
                gap = min(np.linalg.norm(np.array(pose[:2]) - p) for p in path)
                assert gap >= PUSH_CORRIDOR - 1e-3, f"seed {seed}: {other} is in the way"


def test_goals_and_instructions_agree() -> None:
    assert str(make_task("stack", 3).goal[0]).startswith("on(")
    for seed in SEEDS:
        task = make_task("sort", seed)
        assert len(task.goal) == len(BLOCKS)
        for atom in task.goal:
            block, plate = atom.args
            assert block.removesuffix("_block") in task.instruction
            assert plate.replace("_", " ") in task.instruction
        reach = make_task("reach", seed)
        assert reach.goal[0].args[0].replace("_", " ") in reach.instruction
    assert make_task("push", 0).skills == ("push",)
    assert make_task("push", 0).forbids("pick") and not make_task("pick_place", 0).forbids("push")


@pytest.mark.parametrize("name", sorted(TASKS))
def test_no_task_starts_solved(world, name) -> None:
    for seed in range(10):
        task = make_task(name, seed, split=("train", "heldout")[seed % 2])
        assert not task.success(world.reset(task)), f"{name} seed {seed} is solved at reset"
