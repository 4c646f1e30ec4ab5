"""The alfworld planning domain: the LLM planner's vocabulary, observation text and valid set for ALFWorld."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from policies.planning.alfworld_domain import AlfworldView
from policies.planning.domain import Subgoal, valid_now
from policies.planning.domains import make_domain
from policies.planning.parsing import format_subgoal, is_well_formed, parse_subgoal, validate_output
from policies.planning.planner import StepRecord
from policies.planning.prompting import PromptBuilder
from sim.alfworld import TEXT_SKILLS, AlfworldTextEnv, discover_games
from tests.alfworld_history import AT_SHELF, ROOM, WALKED, history_of


def test_valid_set_is_the_admissible_subgoals(game_set: Path, text_env: AlfworldTextEnv) -> None:
    domain = make_domain("alfworld")
    assert [s.name for s in domain.skills()] == list(TEXT_SKILLS)
    first = text_env.reset(discover_games(game_set)[0].path)
    view = AlfworldView(first.text, first.text, first.admissible_commands)
    valid = domain.valid_subgoals(view)
    assert not domain.finish_allowed(view)  # a game not won yet: done() would only forfeit it
    assert domain.finish_allowed(replace(view, won=True))
    assert valid and all(is_well_formed(s) and s.skill in TEXT_SKILLS for s in valid)
    assert parse_subgoal(format_subgoal(valid[0])) == valid[0]

    def explain(subgoal):  # type: ignore[no-untyped-def]
        return domain.explain_invalid(subgoal, view)

    assert validate_output(format_subgoal(valid[0]), valid, explain).valid
    refused = validate_output("go_to(attic 1)", valid, explain)
    assert not refused.valid and "admissible go_to subgoals now" in refused.error
    text = domain.render_observation(view)
    assert "Your task" not in text and "you see a" in text
    system, user = PromptBuilder.for_domain(domain).messages(domain, first.task, view, ())
    assert first.task in user["content"] and "go_to(recep: receptacle)" in system["content"]


def test_going_back_without_a_change_is_redundant() -> None:
    """Regression: holding the object, the shipped adapter walked in cycles of about k + 1 receptacles (k = 4
    history lines in the prompt) until the 50-step budget ran out; every game it lost in evaluation."""
    domain = make_domain("alfworld")
    history = history_of(*WALKED)
    back = domain.redundant(Subgoal("go_to", ("bed 1",)), history)
    assert back is not None and "went there after your last change" in back
    assert domain.redundant(Subgoal("go_to", ("desk 1",)), history) is None
    assert domain.redundant(Subgoal("examine", ("shelf 1",)), history) is None  # only walks are pruned
    assert domain.redundant(Subgoal("go_to", ("drawer 2",)), history) is None  # before the take: a change
    failed_put = StepRecord(Subgoal("put", ("candle 1", "shelf 1")), False, "Nothing happens.")
    assert domain.redundant(Subgoal("go_to", ("bed 1",)), (*history, failed_put)) is not None
    put = StepRecord(Subgoal("put", ("candle 1", "shelf 1")), True, "You put the candle 1 in/on the shelf 1.")
    assert domain.redundant(Subgoal("go_to", ("bed 1",)), (*history, put)) is None


def test_opening_a_receptacle_does_not_make_going_back_worth_it() -> None:
    """Regression: after opening the fridge, the shipped adapter walked the same round of receptacles again
    and again (open counted as a change), and the egg it had to heat, on a countertop it never reached,
    was never found."""
    domain = make_domain("alfworld")
    searched = history_of(
        ("go_to(shelf 1)", "You arrive at shelf 1. On the shelf 1, you see nothing."),
        ("go_to(fridge 1)", "You arrive at fridge 1. The fridge 1 is closed."),
        ("open(fridge 1)", "You open the fridge 1. The fridge 1 is open. In it, you see a lettuce 1."),
    )
    back = domain.redundant(Subgoal("go_to", ("shelf 1",)), searched)
    assert back is not None and "went there after your last change" in back
    closed = (*searched, *history_of(("close(fridge 1)", "You close the fridge 1.")))
    assert domain.redundant(Subgoal("go_to", ("shelf 1",)), closed) is not None
    assert domain.redundant(Subgoal("go_to", ("countertop 1",)), searched) is None
    taken = (*searched, *history_of(("take(lettuce 1, fridge 1)", "You pick up the lettuce 1.")))
    assert domain.redundant(Subgoal("go_to", ("shelf 1",)), taken) is None  # in hand: a change


def test_undoing_the_last_change_is_redundant() -> None:
    """Regression: with the walks pruned, the shipped adapter lost cool and pick games putting the object
    back where it took it from and taking it again, until the budget ran out."""
    domain = make_domain("alfworld")
    history = history_of(*WALKED)  # took the candle from drawer 2, then only walked and looked
    undo = domain.redundant(Subgoal("put", ("candle 1", "drawer 2")), history)
    assert undo is not None and "would undo your last change, take(candle 1, drawer 2)" in undo
    assert domain.redundant(Subgoal("put", ("candle 1", "shelf 1")), history) is None
    put = history_of(("put(candle 1, shelf 1)", "You move the candle 1 to the shelf 1."))
    assert domain.redundant(Subgoal("take", ("candle 1", "shelf 1")), (*history, *put)) is not None
    opened = history_of(("open(drawer 1)", "You open the drawer 1. The drawer 1 is open."))
    assert domain.redundant(Subgoal("close", ("drawer 1",)), opened) is not None
    assert domain.redundant(Subgoal("take", ("candle 1", "shelf 1")), (*history, *put, *opened)) is None

    view = AlfworldView(ROOM, WALKED[-1][1], AT_SHELF)
    assert [str(s) for s in valid_now(domain, view, history)] == ["go_to(desk 1)", "examine(shelf 1)"]
    circled = (*history, *history_of(("go_to(desk 1)", "You arrive at desk 1.")))
    every_walk_done = AlfworldView(ROOM, "You arrive at desk 1.", ("go to bed 1", "go to shelf 1"))
    assert len(valid_now(domain, every_walk_done, circled)) == 2  # all redundant: the model still answers


def test_repeating_the_last_change_or_a_treatment_is_redundant() -> None:
    """Regression: the stage-5 adapter lost look tasks switching the lamp between the same two or three
    walks, each switch a change that made the walks valid again, and a cool task cooling the cooled egg
    between walks to the fridge and the microwave, until the budget ran out."""
    domain = make_domain("alfworld")
    lamp = history_of(
        ("go_to(sidetable 1)", "You arrive at sidetable 1. On the sidetable 1, you see a desklamp 1."),
        ("toggle(desklamp 1)", "You turn on the desklamp 1."),
        ("go_to(shelf 1)", "You arrive at shelf 1."),
        ("go_to(sidetable 1)", "You arrive at sidetable 1."),
    )
    again = domain.redundant(Subgoal("toggle", ("desklamp 1",)), lamp)
    assert again is not None and "was your last change already" in again
    taken = (*lamp, *history_of(("take(laptop 1, sidetable 1)", "You pick up the laptop 1.")))
    assert domain.redundant(Subgoal("toggle", ("desklamp 1",)), taken) is None  # the look itself

    cooled = history_of(
        ("take(egg 1, diningtable 1)", "You pick up the egg 1 from the diningtable 1."),
        ("go_to(fridge 1)", "You arrive at fridge 1."),
        ("cool(egg 1, fridge 1)", "You cool the egg 1 using the fridge 1."),
        ("go_to(microwave 1)", "You arrive at microwave 1."),
        ("open(microwave 1)", "You open the microwave 1."),
        ("go_to(fridge 1)", "You arrive at fridge 1."),
    )
    twice = domain.redundant(Subgoal("cool", ("egg 1", "fridge 1")), cooled)
    assert twice is not None and "egg 1 is cooled already" in twice
    assert domain.redundant(Subgoal("heat", ("egg 1", "microwave 1")), cooled) is None  # not done yet
    other = (
        *cooled,
        *history_of(("put(egg 1, fridge 1)", "You move the egg 1."), ("take(egg 2, fridge 1)", "")),
    )
    assert domain.redundant(Subgoal("cool", ("egg 2", "fridge 1")), other) is None


def holding_line(instruction: str, history: list[StepRecord]) -> str:
    return make_domain("alfworld").render_progress(instruction, history).splitlines()[0]


def test_the_prompt_says_what_is_held_and_what_was_done_to_it() -> None:
    """Regression: after take, a cool task's planner walked to the microwave: once the take had left the
    last k history lines, nothing in the prompt said the apple was in hand and not yet cooled."""
    domain = make_domain("alfworld")
    task = "put a cool apple in microwave"
    history: list[StepRecord] = [StepRecord(Subgoal("go_to", ("fridge 1",)), True, "You arrive at fridge 1.")]
    assert holding_line(task, history) == "Holding: nothing"
    history.append(StepRecord(Subgoal("take", ("apple 1", "fridge 1")), True, "You pick up the apple 1."))
    history.append(StepRecord(Subgoal("heat", ("apple 1", "microwave 1")), False, "Nothing happens."))
    history += [StepRecord(Subgoal("go_to", (f"cabinet {i}",)), True, "You arrive.") for i in range(1, 6)]
    assert holding_line(task, history) == "Holding: apple 1"
    history.append(StepRecord(Subgoal("cool", ("apple 1", "fridge 1")), True, "You cool the apple 1."))
    assert holding_line(task, history) == "Holding: apple 1 (cooled)"
    view = AlfworldView("You are in the middle of a room.", "You cool the apple 1.", ())
    _, user = PromptBuilder.for_domain(domain).messages(domain, task, view, history)
    assert "take(" not in user["content"] and "Holding: apple 1 (cooled)" in user["content"]
    history.append(StepRecord(Subgoal("put", ("apple 1", "microwave 1")), True, "You put the apple 1."))
    assert holding_line(task, history) == "Holding: nothing"


def test_the_prompt_says_where_the_objects_the_task_names_were_seen() -> None:
    """Regression: the prompt showed the game's answer to the last command only, so an object seen two walks
    back was nowhere in it (the adapter shipped before walked on past mugs it had seen)."""
    domain = make_domain("alfworld")
    task = "find two pillow and put them in sofa."
    history = list(
        history_of(
            ("go_to(armchair 1)", "You arrive at armchair 1. On it, you see a pillow 2, and a box 1."),
            ("go_to(drawer 1)", "You arrive at drawer 1. The drawer 1 is closed."),
            ("open(drawer 1)", "You open the drawer 1. The drawer 1 is open. In it, you see a pillow 1."),
            ("go_to(bed 1)", "You arrive at bed 1. On the bed 1, you see a butterpillow 3, a pillowcase 1."),
        )
    )
    # not the box, nor kinds whose names only contain the word
    seen = "Seen: pillow 2 at armchair 1, pillow 1 at drawer 1"
    assert domain.render_progress(task, history) == f"Holding: nothing\n{seen}"
    history += history_of(
        ("go_to(drawer 1)", "You arrive at drawer 1. The drawer 1 is open. In it, you see a pillow 1."),
        ("take(pillow 1, drawer 1)", "You pick up the pillow 1 from the drawer 1."),
    )
    assert domain.render_progress(task, history) == "Holding: pillow 1\nSeen: pillow 2 at armchair 1"
    history += history_of(
        ("go_to(sofa 1)", "You arrive at sofa 1. On the sofa 1, you see nothing."),
        ("put(pillow 1, sofa 1)", "You move the pillow 1 to the sofa 1."),
    )
    assert domain.render_progress(task, history) == "Holding: nothing\nSeen: pillow 2 at armchair 1"
    nothing = domain.render_progress("heat some egg and put it in countertop.", history)
    assert nothing == "Holding: nothing\nSeen: nothing the task names yet"
