"""The skill vocabulary: validation errors, grounding and success, on hand-built scenes."""

from __future__ import annotations

import numpy as np
import pytest

from sim.tabletop import (
    SKILLS,
    ArgumentTypeError,
    ArityError,
    Subgoal,
    SubgoalError,
    UnknownObjectError,
    UnknownSkillError,
    check_subgoal,
    ground,
    subgoal_succeeded,
)
from sim.tabletop.layout import SLOT_SPACING
from sim.tabletop.model import BLOCK_SIZE, TABLE_TOP_Z
from sim.tabletop.predicates import HOVER_HEIGHT
from sim.tabletop.skills import PICK_HEIGHT

Z = TABLE_TOP_Z + BLOCK_SIZE / 2


def test_subgoal_text_and_args() -> None:
    subgoal = Subgoal("place", ["red_block", "left_plate"])
    assert subgoal.args == ("red_block", "left_plate")
    assert str(subgoal) == "place(red_block, left_plate)"
    assert str(Subgoal("pick", ("red_block",))) == "pick(red_block)"
    assert {subgoal, Subgoal("place", ("red_block", "left_plate"))} == {subgoal}


def test_vocabulary() -> None:
    assert set(SKILLS) == {"reach", "pick", "place", "push"}
    assert SKILLS["place"].signature == "place(obj: block, target: plate|block)"


def test_unknown_skill_lists_the_known_ones(scene) -> None:
    with pytest.raises(UnknownSkillError, match=r"'grab'.*pick, place, push, reach"):
        check_subgoal(Subgoal("grab", ("red_block",)), scene())


def test_unknown_object_lists_the_known_ones(scene) -> None:
    with pytest.raises(UnknownObjectError, match=r"'purple_block'.*blue_block, left_plate, red_block"):
        check_subgoal(Subgoal("pick", ("purple_block",)), scene())
    with pytest.raises(UnknownObjectError, match="known objects"):
        scene().object("table")


@pytest.mark.parametrize(
    "subgoal",
    [Subgoal("pick", ()), Subgoal("place", ("red_block",)), Subgoal("reach", ("red_block", "blue_block"))],
)
def test_arity(scene, subgoal) -> None:
    with pytest.raises(ArityError, match=rf"takes {len(SKILLS[subgoal.skill].params)} argument.*usage: "):
        check_subgoal(subgoal, scene())


def test_wrong_category_names_the_valid_objects(scene) -> None:
    with pytest.raises(ArgumentTypeError, match=r"must be a block, got the plate 'left_plate'; valid: red"):
        check_subgoal(Subgoal("pick", ("left_plate",)), scene())
    wanted = r"argument plate .* must be a plate, got the block 'blue_block'; valid: left_plate, right_plate"
    with pytest.raises(ArgumentTypeError, match=wanted):
        check_subgoal(Subgoal("push", ("red_block", "blue_block")), scene())


def test_same_object_twice_and_non_names(scene) -> None:
    with pytest.raises(ArgumentTypeError, match="its own target"):
        check_subgoal(Subgoal("place", ("red_block", "red_block")), scene())
    with pytest.raises(ArgumentTypeError, match="object name"):
        check_subgoal(Subgoal("pick", (3,)), scene())


def test_every_error_is_a_subgoal_error() -> None:
    for error in (UnknownSkillError, UnknownObjectError, ArityError, ArgumentTypeError):
        assert issubclass(error, SubgoalError)
        assert issubclass(error, ValueError)


def test_ground_reach_and_pick(scene) -> None:
    state = scene()
    np.testing.assert_allclose(ground(Subgoal("reach", ("red_block",)), state), (0.5, 0.0, Z + HOVER_HEIGHT))
    pick = ground(Subgoal("pick", ("red_block",)), state)
    assert pick.dtype == np.float64 and pick.shape == (3,)
    np.testing.assert_allclose(pick, (0.5, 0.0, TABLE_TOP_Z + PICK_HEIGHT + BLOCK_SIZE / 2))


def test_place_on_a_block_targets_its_top(scene) -> None:
    goal = ground(Subgoal("place", ("red_block", "blue_block")), scene())
    np.testing.assert_allclose(goal, (0.4, 0.1, Z + BLOCK_SIZE))


def test_place_on_a_plate_takes_the_nearest_free_slot(scene) -> None:
    # red is held near the plate's -y end; the slot there is taken by blue, so the next one is chosen.
    blocks = {"red_block": (0.5, 0.0, 0.15), "blue_block": (0.5, 0.25 - 1.5 * SLOT_SPACING, Z)}
    goal = ground(Subgoal("place", ("red_block", "left_plate")), scene(blocks=blocks))
    np.testing.assert_allclose(goal, (0.5, 0.25 - 0.5 * SLOT_SPACING, Z))
    alone = scene(blocks={"red_block": (0.5, 0.0, 0.15)})
    empty = ground(Subgoal("place", ("red_block", "left_plate")), alone)
    np.testing.assert_allclose(empty, (0.5, 0.25 - 1.5 * SLOT_SPACING, Z))


def test_push_grounds_to_a_slot_at_resting_height(scene) -> None:
    goal = ground(Subgoal("push", ("red_block", "right_plate")), scene())
    np.testing.assert_allclose(goal, (0.5, -0.25 + 1.5 * SLOT_SPACING, Z))


def test_success_uses_the_predicates(scene) -> None:
    assert subgoal_succeeded(Subgoal("reach", ("red_block",)), scene(ee=(0.5, 0.0, Z + HOVER_HEIGHT)))
    assert not subgoal_succeeded(Subgoal("reach", ("red_block",)), scene())
    lifted = scene(ee=(0.5, 0.0, Z + 0.07), width=0.04, blocks={"red_block": (0.5, 0.0, Z + 0.07)})
    assert subgoal_succeeded(Subgoal("pick", ("red_block",)), lifted)
    assert not subgoal_succeeded(Subgoal("pick", ("red_block",)), scene(ee=(0.5, 0.0, Z), width=0.04))
    on_plate = {"red_block": (0.5, 0.25, Z)}
    assert subgoal_succeeded(Subgoal("place", ("red_block", "left_plate")), scene(blocks=on_plate))
    assert subgoal_succeeded(Subgoal("push", ("red_block", "left_plate")), scene(blocks=on_plate))
    assert not subgoal_succeeded(Subgoal("push", ("red_block", "right_plate")), scene(blocks=on_plate))
