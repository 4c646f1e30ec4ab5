"""Predicates on hand-built scenes: the single definitions that skills and tasks both use."""

from __future__ import annotations

import pytest

from sim.tabletop.model import BLOCK_SIZE, TABLE_TOP_Z
from sim.tabletop.predicates import HOVER_HEIGHT, above, held, lifted, near, on

Z = TABLE_TOP_Z + BLOCK_SIZE / 2


def test_near_is_a_distance_threshold() -> None:
    assert near((0, 0, 0), (0.01, 0, 0), 0.02)
    assert not near((0, 0, 0), (0.03, 0, 0), 0.02)


def test_above_needs_the_hover_point(scene) -> None:
    assert above(scene(ee=(0.5, 0.0, Z + HOVER_HEIGHT)), "red_block")
    assert above(scene(ee=(0.51, 0.0, Z + HOVER_HEIGHT + 0.01)), "red_block")
    assert not above(scene(ee=(0.5, 0.0, Z + 0.3)), "red_block")
    assert not above(scene(ee=(0.45, 0.0, Z + HOVER_HEIGHT)), "red_block")


@pytest.mark.parametrize(
    ("ee", "width", "expected"),
    [
        ((0.5, 0.0, Z), 0.04, True),  # closed on the block
        ((0.5, 0.0, Z), 0.08, False),  # fingers open around it
        ((0.5, 0.0, Z), 0.0, False),  # closed on nothing
        ((0.5, 0.0, Z + 0.05), 0.04, False),  # closed above it
        ((0.53, 0.0, Z), 0.04, False),  # beside it
    ],
)
def test_held(scene, ee, width, expected) -> None:
    assert held(scene(ee=ee, width=width), "red_block") is expected


def test_lifted_measures_the_lower_face(scene) -> None:
    assert not lifted(scene(), "red_block")
    raised = scene(blocks={"red_block": (0.5, 0.0, Z + 0.06)})
    assert lifted(raised, "red_block")


def test_on_plate(scene) -> None:
    on_plate = {"red_block": (0.5, 0.3, Z), "blue_block": (0.4, 0.0, Z)}
    assert on(scene(blocks=on_plate), "red_block", "left_plate")
    assert not on(scene(blocks=on_plate), "red_block", "right_plate")
    assert not on(scene(blocks=on_plate), "blue_block", "left_plate")
    over_edge = {"red_block": (0.5, 0.25 + 0.12, Z)}
    assert not on(scene(blocks=over_edge), "red_block", "left_plate")
    hovering = {"red_block": (0.5, 0.3, Z + 0.05)}
    assert not on(scene(blocks=hovering), "red_block", "left_plate")


def test_on_plate_needs_release(scene) -> None:
    on_plate = {"red_block": (0.5, 0.3, Z)}
    assert not on(scene(ee=(0.5, 0.3, Z), width=0.04, blocks=on_plate), "red_block", "left_plate")
    assert on(scene(ee=(0.5, 0.3, Z), width=0.08, blocks=on_plate), "red_block", "left_plate")


def test_on_block(scene) -> None:
    stacked = {"red_block": (0.405, 0.1, Z + BLOCK_SIZE), "blue_block": (0.4, 0.1, Z)}
    assert on(scene(blocks=stacked), "red_block", "blue_block")
    assert not on(scene(blocks=stacked), "blue_block", "red_block")
    assert not on(scene(blocks=stacked), "red_block", "red_block")
    offset = {"red_block": (0.43, 0.1, Z + BLOCK_SIZE), "blue_block": (0.4, 0.1, Z)}
    assert not on(scene(blocks=offset), "red_block", "blue_block")
    side_by_side = {"red_block": (0.45, 0.1, Z), "blue_block": (0.4, 0.1, Z)}
    assert not on(scene(blocks=side_by_side), "red_block", "blue_block")
