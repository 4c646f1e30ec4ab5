"""Tabletop demonstrations: the expert planner's decisions on seeded tasks (or, for DAgger, its labels of
the states a learner reaches), each recorded with the LLM planner's own chat messages for that decision
(the `PromptBuilder` the planner node uses: one renderer), in the record layout of `hgpo alfworld demos`.

With `goals` (for a planner with `llm.goal_parse`), each episode starts with a record of the goal as the
planner is to write it (`expert_goal`: the task's goal atoms), and every decision's prompt shows that goal
with its progress."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from policies.control import ExpertSkillPolicy, SkillPolicy, SkillPolicyConfig, make_skill_policy
from policies.evaluation import run_episode
from policies.planning import LoopConfig, Planner, StepRecord, format_subgoal
from policies.planning.dagger import ExpertLabelledPlanner
from policies.planning.domain import valid_now
from policies.planning.llm_config import LLMConfig
from policies.planning.prompting import PromptBuilder
from policies.tabletop.domain import TabletopDomain
from policies.tabletop.goals import PlannerGoal
from policies.tabletop.planners import ExpertPlannerBackend
from sim.tabletop import TASKS, SceneState, Subgoal, TabletopWorld, Task, WorldConfig, make_task
from sim.tabletop.layout import LayoutRanges
from sim.tabletop.phrasing import Split, draw, render


class _Recorder:
    """One record per labelled decision of one episode, with the prompt the planner would have got."""

    def __init__(self, task: Task, prompts: PromptBuilder, dagger: bool) -> None:
        self.task, self.prompts, self.dagger = task, prompts, dagger
        self.domain = TabletopDomain()
        self.records: list[dict[str, Any]] = []
        self.goal = PlannerGoal(task.goal, task.forbidden) if prompts.goal is not None else None

    def _record(self, instruction: str, state: SceneState, history: tuple[StepRecord, ...]) -> dict[str, Any]:
        return {
            "task": self.task.name,
            "seed": self.task.seed,
            "phrasing": self.task.phrasing,
            "split": self.task.split,
            "instruction": instruction,
            "observation": self.domain.render_observation(state),
            "history": [[format_subgoal(s.subgoal), s.message] for s in history],
        }

    def __call__(
        self,
        instruction: str,
        state: SceneState,
        history: tuple[StepRecord, ...],
        label: Subgoal,
        choice: Subgoal | None,
    ) -> None:
        goal = None
        if self.goal is not None:
            goal = self.goal.render(state)
            if not history:
                scene = self.domain.render_observation(state)
                parse = self.prompts.parse_messages(self.domain, instruction, scene)
                self.records.append(
                    self._record(instruction, state, history)
                    | {"expert_goal": str(self.goal), "messages": [dict(m) for m in parse]}
                )
        messages = self.prompts.messages(self.domain, instruction, state, history, goal)
        learner = {"learner_subgoal": format_subgoal(choice) if choice else None} if self.dagger else {}
        self.records.append(
            self._record(instruction, state, history)
            | {
                "admissible_subgoals": [
                    format_subgoal(s) for s in valid_now(self.domain, state, instruction, history)
                ],
                "expert_subgoal": format_subgoal(label),
                "messages": [dict(m) for m in messages],
            }
            | learner
        )


def demonstration_player(
    history_k: int = 4,
    max_subgoals: int = 10,
    split: Split | None = None,
    learner: Planner | None = None,
    policy: SkillPolicy | None = None,
    goals: bool = False,
) -> Callable[[tuple[str, int]], tuple[bool, list[dict[str, Any]]]]:
    """Plays (task, seed): whether the episode succeeded and one record per decision, labelled by the expert
    planner. Without `learner` the expert plays (demonstrations); with one, the learner plays and the expert
    labels every state it reaches (DAgger). The loop ends when the task succeeds, so no decision after
    success (a closing done()) is ever asked for. `split` draws the instructions from that grammar split
    (None: the canonical sentences); `policy` executes the skills (default: the scripted expert); `goals`
    records the goal and shows it in every prompt (module docstring)."""
    prompts = PromptBuilder.for_domain(TabletopDomain(), history_k, goals=goals)
    world = TabletopWorld(WorldConfig(control_dt=0.01))
    skills = policy or ExpertSkillPolicy()
    loop = LoopConfig(max_subgoals=max_subgoals)
    expert = ExpertPlannerBackend()

    def play(job: tuple[str, int]) -> tuple[bool, list[dict[str, Any]]]:
        task = make_task(*job, split=split)
        recorder = _Recorder(task, prompts, dagger=learner is not None)
        player = ExpertLabelledPlanner(learner or expert, expert, recorder)
        result = run_episode(world, task, player, skills, action_hold=4, loop=loop)
        return result.success, recorder.records

    return play


def tabletop_demonstrations(
    tasks: Sequence[str],
    seeds: Sequence[int],
    history_k: int = 4,
    max_subgoals: int = 10,
    split: Split | None = None,
    learner: Planner | None = None,
    policy: SkillPolicy | None = None,
    goals: bool = False,
) -> Iterator[tuple[bool, list[dict[str, Any]]]]:
    """`demonstration_player`'s episodes for every task and seed, in that order."""
    play = demonstration_player(history_k, max_subgoals, split, learner, policy, goals)
    for name in tasks:
        for seed in seeds:
            yield play((name, seed))


@dataclass(frozen=True)
class TabletopDemoPlayers:
    """`demonstration_player` as a picklable recipe, so each Ray worker (policies/sharding.py) builds its own
    world, skills and learner."""

    history_k: int = 4
    split: Split | None = None
    learner: LLMConfig | None = None  # DAgger: the LLM planner with these settings plays; None: the expert
    skills: str = "expert"
    skill_config: SkillPolicyConfig = field(default_factory=SkillPolicyConfig)
    goals: bool = False

    @contextmanager
    def open(self) -> Iterator[Callable[[tuple[str, int]], tuple[bool, list[dict[str, Any]]]]]:
        from policies.worlds import make_planner

        policy = make_skill_policy(self.skills, self.skill_config)
        learner = make_planner("llm", self.learner) if self.learner is not None else None
        yield demonstration_player(
            self.history_k, split=self.split, learner=learner, policy=policy, goals=self.goals
        )


def rephrase(record: dict[str, Any], copies: int, rng: np.random.Generator) -> list[dict[str, Any]]:
    """Up to `copies` versions of a tabletop decision record, each with its instruction in another training
    phrasing of its family, words drawn with `rng`: the same decision under other words, for BC data that
    varies the language more than the episodes played do. The goal's slots are rebuilt from the record's
    task, seed and split (default layout ranges, as `tabletop_demonstrations` plays them); the prompt changes
    in its instruction line only. Copies repeat no sentence, the record's own included."""
    if record.get("split") == "heldout":
        raise ValueError(f"{record['task']} seed {record['seed']}: held-out records are never rephrased")
    spec = TASKS[record["task"]]
    draft = spec.build(np.random.default_rng(record["seed"]), LayoutRanges(), record.get("split"))
    old_line = f"Instruction: {record['instruction']}\n"
    out: list[dict[str, Any]] = []
    said = {record["instruction"]}
    for _ in range(4 * copies):  # a few retries where a draw repeats a sentence
        if len(out) == copies:
            break
        phrasing = draw(record["task"], "train", rng)
        instruction = render(phrasing, draft.slots, rng)
        if instruction in said:
            continue
        said.add(instruction)
        messages = [dict(m) for m in record["messages"]]
        (user,) = [m for m in messages if m["role"] == "user"]
        if user["content"].count(old_line) != 1:
            raise ValueError(f"{record['task']} seed {record['seed']}: no one instruction line")
        user["content"] = user["content"].replace(old_line, f"Instruction: {instruction}\n")
        out.append({**record, "instruction": instruction, "phrasing": phrasing.id, "messages": messages})
    return out
