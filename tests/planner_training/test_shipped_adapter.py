"""The adapters shipped for the planner, found by name and loaded on the real SmolLM2. The tabletop one
plans held-out tasks right (its model card: 100/100 held-out episodes, zero-shot 0.28): a reach, and a
sorted block put on the plate the instruction names for its colour. The ALFWorld one (23/24 held-out games,
zero-shot 0/12) takes the object the task needs, not the first one it sees, and then carries it where the
task says (the earlier last-6-blocks adapter walked on to the next receptacle instead)."""

from __future__ import annotations

from pathlib import Path

import pytest

from policies.planning import LLMConfig, LLMPlanner, PlanningContext
from policies.planning.backends import ModelError
from policies.planning.backends.transformers_lm import PRETRAINED_ADAPTERS, TransformersModel, resolve_adapter
from policies.worlds import make_domain
from sim.tabletop import TabletopWorld, make_task


def test_bare_names_resolve_to_shipped_adapters(tmp_path: Path) -> None:
    for domain in ("tabletop", "alfworld"):
        assert resolve_adapter(domain) == PRETRAINED_ADAPTERS / domain
        assert (PRETRAINED_ADAPTERS / domain / "MODEL_CARD.md").is_file()
    assert resolve_adapter(str(tmp_path)) == tmp_path
    assert resolve_adapter("kitchen") == Path("kitchen")  # not shipped: a relative folder


def test_unknown_adapter_lists_the_shipped_ones(smollm2_dir: Path) -> None:
    with pytest.raises(ModelError, match=r"or a shipped one by name \(alfworld, tabletop\)"):
        TransformersModel(LLMConfig(adapter="kitchen"))


def test_shipped_adapter_plans_a_held_out_reach(smollm2_dir: Path) -> None:
    world = TabletopWorld()
    task = make_task("reach", 1000)
    world.reset(task)
    config = LLMConfig(adapter="tabletop")
    planner = LLMPlanner(make_domain("tabletop"), TransformersModel(config), config)
    subgoal = planner.next_subgoal(PlanningContext(task.instruction, world.state(), (), task))
    target = task.goal[0].args[0]
    assert subgoal is not None and (subgoal.skill, subgoal.args) == ("reach", (target,)), task.instruction


@pytest.mark.parametrize("seed", [1000, 1001])
def test_shipped_adapter_sorts_a_held_block_by_the_instructions_colour_rule(
    smollm2_dir: Path, seed: int
) -> None:
    """The rule that BC on the last 6 blocks never learned (the old adapter put every block on one plate)."""
    from policies.control import ExpertSkillPolicy, execute_subgoal
    from policies.planning import StepRecord
    from sim.tabletop import Subgoal

    world = TabletopWorld()
    task = make_task("sort", seed)
    world.reset(task)
    block = world.state().names("block")[0]
    pick = Subgoal("pick", (block,))
    assert execute_subgoal(world, pick, ExpertSkillPolicy(), timeout_s=10.0, action_hold=4).success
    config = LLMConfig(adapter="tabletop")
    planner = LLMPlanner(make_domain("tabletop"), TransformersModel(config), config)
    history = (StepRecord(pick, True, f"{pick} succeeded"),)
    subgoal = planner.next_subgoal(PlanningContext(task.instruction, world.state(), history, task))
    plate = next(atom.args[1] for atom in task.goal if atom.args[0] == block)
    assert subgoal is not None and (subgoal.skill, subgoal.args) == ("place", (block, plate)), (
        task.instruction
    )


ROOM = (
    "-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly around you, you "
    "see a bed 1, a desk 1, a drawer 2, a drawer 1, a garbagecan 1, and a shelf 1.\n\n"
    "Your task is to: put a candle in garbagecan."
)
PLACES = ("bed 1", "desk 1", "drawer 2", "drawer 1", "garbagecan 1", "shelf 1")
SEARCHED = (
    ("go_to(bed 1)", "You arrive at bed 1. On the bed 1, you see a pillow 1."),
    ("go_to(desk 1)", "You arrive at desk 1. On the desk 1, you see a pen 1."),
    ("go_to(drawer 2)", "You arrive at drawer 2. The drawer 2 is closed."),
    ("open(drawer 2)", "You open the drawer 2. The drawer 2 is open. In it, you see a cd 2, and a candle 1."),
)
TOOK = ("take(candle 1, drawer 2)", "You pick up the candle 1 from the drawer 2.")


@pytest.mark.parametrize(
    ("steps", "commands", "expected"),
    [
        (
            SEARCHED,
            ("close drawer 2", "examine drawer 2", "take cd 2 from drawer 2", "take candle 1 from drawer 2"),
            "take(candle 1, drawer 2)",
        ),
        ((*SEARCHED, TOOK), ("examine candle 1", "move candle 1 to drawer 2"), "go_to(garbagecan 1)"),
    ],
    ids=["takes-what-it-sees", "carries-it-to-the-destination"],
)
def test_shipped_alfworld_adapter_takes_what_the_task_needs(
    smollm2_dir: Path, steps: tuple[tuple[str, str], ...], commands: tuple[str, ...], expected: str
) -> None:
    from policies.alfworld.domain import AlfworldView
    from tests.alfworld_history import history_of

    admissible = (*commands, *(f"go to {place}" for place in PLACES if place != "drawer 2"), "inventory")
    view = AlfworldView(ROOM, steps[-1][1], admissible)
    history = history_of(*steps)
    config = LLMConfig(domain="alfworld", adapter="alfworld")
    planner = LLMPlanner(make_domain("alfworld"), TransformersModel(config), config)
    subgoal = planner.next_subgoal(PlanningContext("put a candle in garbagecan.", view, history))
    assert str(subgoal) == expected


def test_training_starts_from_the_shipped_adapter_as_its_reference(smollm2_dir: Path) -> None:
    """RL and DPO start from an adapter named like the planner's `llm.adapter`: the trainable copy and the
    frozen reference agree before the first update, and differ from the base model."""
    import torch

    from policies.planner_training.config import LoraSettings
    from policies.planner_training.data import collate, encode
    from policies.planner_training.model import load_policy, token_logprobs

    policy = load_policy("smollm2-135m-instruct", "tabletop", LoraSettings())
    example = encode(
        policy.tokenizer, [{"role": "user", "content": "reach the red block"}], "reach(red_block)"
    )  # type: ignore[list-item]
    batch = collate([example], policy.pad_id)
    policy.model.eval()
    with torch.no_grad():
        trained, _, _ = token_logprobs(policy.model, batch)
        with policy.reference():
            reference, _, _ = token_logprobs(policy.model, batch)
        with policy.model.disable_adapter():
            base, _, _ = token_logprobs(policy.model, batch)
    torch.testing.assert_close(trained, reference)
    assert (trained - base).abs().max() > 1e-3
    assert any(p.requires_grad for p in policy.model.parameters())
