"""Tabletop demonstrations: the expert planner's decisions on seeded tasks, each recorded with the LLM
planner's own chat messages for that decision (the `PromptBuilder` the planner node uses: one renderer),
in the record layout of `hgpo alfworld demos`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from policies.control import ExpertSkillPolicy
from policies.evaluation import run_episode
from policies.planning import ExpertPlannerBackend, LoopConfig, StepRecord, TabletopDomain, format_subgoal
from policies.planning.domain import valid_now
from policies.planning.prompting import PromptBuilder
from sim.tabletop import Subgoal, TabletopWorld, Task, WorldConfig, make_task
from sim.tabletop.phrasing import Split


class _Recorder:
    """Records each decision of one episode as the planner saw it, with the prompt it would have got."""

    def __init__(self, world: TabletopWorld, task: Task, prompts: PromptBuilder) -> None:
        self.world, self.task, self.prompts = world, task, prompts
        self.domain = TabletopDomain()
        self.history: list[StepRecord] = []
        self.records: list[dict[str, Any]] = []

    def __call__(self, _index: int, subgoal: Subgoal, record: StepRecord | None) -> None:
        if record is not None:
            self.history.append(record)
            return
        state = self.world.state()  # what the planner just observed: nothing has moved since
        messages = self.prompts.messages(self.domain, self.task.instruction, state, self.history)
        self.records.append(
            {
                "task": self.task.name,
                "seed": self.task.seed,
                "phrasing": self.task.phrasing,
                "split": self.task.split,
                "instruction": self.task.instruction,
                "observation": self.domain.render_observation(state),
                "history": [[format_subgoal(s.subgoal), s.message] for s in self.history],
                "admissible_subgoals": [
                    format_subgoal(s)
                    for s in valid_now(self.domain, state, self.task.instruction, self.history)
                ],
                "expert_subgoal": format_subgoal(subgoal),
                "messages": [dict(m) for m in messages],
            }
        )


def tabletop_demonstrations(
    tasks: Sequence[str],
    seeds: Sequence[int],
    history_k: int = 4,
    max_subgoals: int = 10,
    split: Split | None = None,
) -> Iterator[tuple[bool, list[dict[str, Any]]]]:
    """Per (task, seed): whether the expert solved it and one record per decision it made. The loop ends
    when the task succeeds, so no decision after success (a closing done()) is ever asked for. `split`
    draws the instructions from that grammar split (None: the canonical sentences)."""
    prompts = PromptBuilder.for_domain(TabletopDomain(), history_k)
    world = TabletopWorld(WorldConfig(control_dt=0.01))
    policy = ExpertSkillPolicy()
    loop = LoopConfig(max_subgoals=max_subgoals)
    for name in tasks:
        for seed in seeds:
            task = make_task(name, seed, split=split)
            recorder = _Recorder(world, task, prompts)
            result = run_episode(
                world, task, ExpertPlannerBackend(), policy, action_hold=4, loop=loop, on_event=recorder
            )
            yield result.success, recorder.records
