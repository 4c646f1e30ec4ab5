"""DAgger on the tabletop: the learner plays, the expert planner labels every state the learner reaches,
including the ones its mistakes lead to, and the records are the prompts the planner gives its model."""

from __future__ import annotations

from policies.planner_training.demos import tabletop_demonstrations
from policies.planning import PlanningContext
from sim.tabletop import SceneState, Subgoal, make_task


class RePicker:
    """A learner that places the first goal block, then picks and places that same block again and stops:
    the mistake multi-block goals saw from the BC adapter (issue 40), which expert trajectories never show."""

    name = "re-picker"
    last_trace = None

    def next_subgoal(self, context: PlanningContext[SceneState]) -> Subgoal | None:
        block, plate = context.task.goal[0].args
        plan = [Subgoal("pick", (block,)), Subgoal("place", (block, plate))] * 2
        return plan[len(context.history)] if len(context.history) < len(plan) else None


def test_the_expert_labels_every_state_the_learner_reaches_and_its_mistakes_get_the_way_out() -> None:
    task = make_task("multi_place", 0, split="train")
    (first, plate), (second, _) = task.goal[0].args, task.goal[1].args
    [(success, records)] = list(
        tabletop_demonstrations(["multi_place"], [0], split="train", learner=RePicker())
    )

    assert not success  # the learner stopped with one block of three on the plate
    assert [len(r["history"]) for r in records] == [0, 1, 2, 3, 4]  # every state, the one it stopped at too
    learner_did = [h[0] for h in records[-1]["history"]]
    assert learner_did == [f"pick({first})", f"place({first}, {plate})"] * 2
    labels = [r["expert_subgoal"] for r in records]
    assert labels[:2] == [f"pick({first})", f"place({first}, {plate})"]  # where the two agree
    assert labels[2] == f"pick({second})"  # the learner re-picks the placed block: the label moves on
    assert labels[4] == f"pick({second})"  # and where it stopped too early
    assert [r["learner_subgoal"] for r in records] == [*learner_did, None]  # what the learner chose there
    for record in records:
        assert record["expert_subgoal"] in record["admissible_subgoals"]
        assert record["instruction"] == task.instruction and record["split"] == "train"
        assert record["messages"][-1]["role"] == "user"


def test_without_a_learner_the_expert_plays_and_labels_its_own_states() -> None:
    [(success, records)] = list(tabletop_demonstrations(["multi_place"], [0], split="train"))
    assert success
    assert [len(r["history"]) for r in records] == list(range(len(records)))
    assert [h[0] for h in records[-1]["history"]] == [r["expert_subgoal"] for r in records[:-1]]
    assert not any("learner_subgoal" in r for r in records)  # demonstrations: one planner, one field
