"""DAgger's data collection (Ross et al., 2011), for any planning domain: a learner plays and an expert
labels every state it reaches.

Behaviour cloning sees only the states the expert's own trajectories pass through; a learner that strays
(walks past the sink basin with the tomato, picks a block it already placed) meets states it was never
shown. Labelling the states the learner reaches teaches it to recover from its own mistakes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic

from policies.planning.decisions import DecisionTrace
from policies.planning.domain import Subgoal
from policies.planning.planner import ObsT, Planner, PlanningContext, StepRecord

LabelHook = Callable[[str, ObsT, tuple[StepRecord, ...], Subgoal, Subgoal | None], None]
"""(instruction, what the planner saw, the history before it, the expert's subgoal there, the learner's
choice there: None where it stopped or failed), so that a round can keep the states where the two differ."""

SkipRule = Callable[[Subgoal | None, Subgoal | None, tuple[StepRecord, ...]], bool]
"""(label, learner's choice, history) -> whether the label is noise to leave out."""


class ExpertLabelledPlanner(Generic[ObsT]):
    """`learner` chooses what runs; at every state it reaches `expert` says what it would do there, which
    `on_label` receives. The label is taken before the learner answers, so the states where the learner
    fails, loops or stops too early are labelled too. `skip` leaves out labels a domain knows to be noise
    (counted in `skipped`). With the expert as its own learner this records plain demonstrations."""

    def __init__(
        self,
        learner: Planner,
        expert: Planner,
        on_label: LabelHook[ObsT],
        skip: SkipRule | None = None,
    ) -> None:
        self.learner, self.expert, self.on_label, self.skip = learner, expert, on_label, skip
        self.skipped = 0
        self.name = f"{learner.name} labelled by {expert.name}"
        self.last_trace: DecisionTrace | None = None

    def next_subgoal(self, context: PlanningContext[ObsT]) -> Subgoal | None:
        label = self.expert.next_subgoal(context)
        choice: Subgoal | None = None
        try:
            choice = self.learner.next_subgoal(context)
            return choice
        finally:
            self.last_trace = self.learner.last_trace
            if self.skip is not None and self.skip(label, choice, context.history):
                self.skipped += 1
            elif label is not None:
                self.on_label(context.instruction, context.state, context.history, label, choice)
