"""The `searcher` planner, ALFWorld's expert without its knowledge of where things are hidden, on
hand-written game states (test_alfworld_cli: it wins every generated game of each type)."""

from __future__ import annotations

from policies.alfworld.domain import AlfworldView
from policies.planning.domain import Subgoal
from policies.planning.planner import PlanningContext
from policies.worlds import make_planner
from tests.alfworld_history import history_of

ROOM = (
    "-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly around you, "
    "you see a bed 1, a drawer 1, a shelf 1, and a garbagecan 1.\n\n"
    "Your task is to: look at apple under the desklamp"
)
FETCH_APPLE = ("go to garbagecan 1", "take apple 1 from garbagecan 1", "go to shelf 1", "use desklamp 1")


def decide(plan: tuple[str, ...], *steps: tuple[str, str]) -> Subgoal | None:
    """The searcher's next subgoal after `steps` (subgoal, the game's answer), the expert planning `plan`."""
    history = history_of(*steps)
    last = steps[-1][1] if steps else ROOM
    view = AlfworldView(ROOM, last, (), expert_plan=plan)
    return make_planner("searcher", domain="alfworld").next_subgoal(
        PlanningContext("look at apple under the desklamp", view, history)
    )


def test_it_searches_in_the_rooms_order_instead_of_walking_to_the_hidden_object() -> None:
    assert decide(FETCH_APPLE) == Subgoal("go_to", ("bed 1",))  # the expert would go to garbagecan 1
    bed = ("go_to(bed 1)", "You arrive at bed 1. On the bed 1, you see nothing.")
    assert decide(FETCH_APPLE, bed) == Subgoal("go_to", ("drawer 1",))
    drawer = ("go_to(drawer 1)", "You arrive at drawer 1. The drawer 1 is closed.")
    assert decide(FETCH_APPLE, bed, drawer) == Subgoal("open", ("drawer 1",))
    opened = ("open(drawer 1)", "You open the drawer 1. The drawer 1 is open. In it, you see a apple 2.")
    # any apple will do: the one it found, not the one the expert had in mind
    assert decide(FETCH_APPLE, bed, drawer, opened) == Subgoal("take", ("apple 2", "drawer 1"))


def test_it_goes_back_for_what_it_saw_and_straight_to_destinations() -> None:
    shelf = ("go_to(shelf 1)", "You arrive at shelf 1. On the shelf 1, you see a desklamp 1.")
    found = ("go_to(garbagecan 1)", "You arrive at garbagecan 1. On the garbagecan 1, you see a apple 1.")
    took = ("take(apple 1, garbagecan 1)", "You pick up the apple 1 from the garbagecan 1.")
    plan = ("go to shelf 1", "use desklamp 1")
    assert decide(plan, shelf, found, took) == Subgoal("go_to", ("shelf 1",))
    at_shelf = ("go_to(shelf 1)", "You arrive at shelf 1. On the shelf 1, you see a desklamp 1.")
    assert decide(("use desklamp 1",), shelf, found, took, at_shelf) == Subgoal("toggle", ("desklamp 1",))
    # a receptacle the room lists is a destination, not something to search for
    assert decide(("go to fridge 1", "cool apple 1 with fridge 1")) == Subgoal("go_to", ("fridge 1",))
    assert decide(()) is None


def test_what_it_moved_is_not_fetched_again() -> None:
    """Two apples to put away: the one already put in the garbage can is not the second."""
    seen = ("go_to(bed 1)", "You arrive at bed 1. On the bed 1, you see a apple 1.")
    took = ("take(apple 1, bed 1)", "You pick up the apple 1 from the bed 1.")
    put = ("put(apple 1, garbagecan 1)", "You move the apple 1 to the garbagecan 1.")
    plan = (
        "go to shelf 1",
        "take apple 3 from shelf 1",
        "go to garbagecan 1",
        "move apple 3 to garbagecan 1",
    )
    assert decide(plan, seen, took, put) == Subgoal("go_to", ("drawer 1",))
