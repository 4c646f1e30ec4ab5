"""ALFWorld games in-process through the project's one closed loop (`policies.planning.run_closed_loop`):
the text env is observed as the `alfworld` planning domain's `AlfworldView`, subgoals run as text skills,
and a game succeeds when won. Used by evaluation, demonstrations and the benchmark."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from policies.alfworld.domain import AlfworldDomain, AlfworldView
from policies.planning import Decision, LoopConfig, Planner, StepRecord, run_closed_loop
from policies.planning.domain import Subgoal, valid_now
from policies.planning.llm_config import LLMConfig
from policies.planning.prompting import PromptBuilder
from sim.alfworld import AlfworldTextEnv, GameEntry, TextEnv, TextObservation, execute_subgoal


class GameGoal:
    """A text game's goal for the closed loop: won is success."""

    def success(self, state: AlfworldView, /) -> bool:
        return state.won


def game_ended(state: AlfworldView) -> str | None:
    """Why the game ended unsolved (its command budget), or None while it goes on."""
    return f"step budget spent ({state.steps} commands)" if state.done and not state.won else None


def view_of(
    observation: TextObservation, room: str, expert_plan: tuple[str, ...] | None = None
) -> AlfworldView:
    """The planning domain's observation of a game's `TextObservation`; `room` is the text after reset."""
    return AlfworldView(
        room,
        observation.text,
        observation.admissible_commands,
        won=observation.won,
        done=observation.done,
        steps=observation.steps,
        expert_plan=expert_plan,
    )


def game_loop_config(max_subgoals: int) -> LoopConfig:
    """The closed loop's limits for a game: every subgoal tried counts against the game's budget."""
    return LoopConfig(max_subgoals=max_subgoals)


@dataclass
class EpisodeResult:
    game: str
    task_type: str
    task: str
    won: bool
    steps: int  # subgoals tried, valid or not (each valid one is one game command)
    wall_s: float
    message: str
    grammar: str  # the game's command grammar (sim/alfworld/grammar.py), e.g. "alfworld-0.4"
    not_admissible: int  # subgoals no admissible command says: never played (a grammar mismatch shows here)
    nothing_happens: int  # commands played that the game answered "Nothing happens."
    history: list[StepRecord] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)  # every planner call, with its result

    @property
    def refused(self) -> int:
        """Subgoals the game refused, either way."""
        return self.not_admissible + self.nothing_happens


# (instruction, what the planner saw, the history before it, the planned subgoal): how demonstrations are
# recorded
DecisionHook = Callable[[str, AlfworldView, tuple[StepRecord, ...], Subgoal], None]


def run_episode(
    env: TextEnv,
    game: GameEntry,
    planner: Planner,
    with_expert_plan: bool,
    on_decision: DecisionHook | None = None,
    config: LoopConfig | None = None,
) -> EpisodeResult:
    """One game through `run_closed_loop`; by default the env's step budget is the subgoal budget.
    `with_expert_plan` attaches ALFWorld's planner expert's plan to each observation (the expert needs it)."""
    started = time.perf_counter()
    first = env.reset(game.path)
    current = {"observation": first}
    history: list[StepRecord] = []
    played: list[bool] = []  # per history entry: whether a command reached the game
    seen: list[AlfworldView] = []  # the latest view, for the decision hook

    def observe() -> AlfworldView:
        plan = env.expert_plan() if with_expert_plan else None
        seen[:] = [view_of(current["observation"], first.text, plan)]
        return seen[0]

    def execute(subgoal: Subgoal) -> StepRecord:
        outcome = execute_subgoal(env, current["observation"], subgoal)
        if outcome.observation is not None:
            current["observation"] = outcome.observation
        history.append(StepRecord(subgoal, outcome.success, outcome.message))
        played.append(bool(outcome.command))
        return history[-1]

    def on_event(_index: int, subgoal: Subgoal, record: StepRecord | None) -> None:
        if record is None and on_decision is not None:
            on_decision(first.task, seen[0], tuple(history), subgoal)

    outcome = run_closed_loop(
        planner,
        first.task,
        observe,
        execute,
        task=GameGoal(),
        config=config or game_loop_config(env.max_steps),
        on_event=on_event,
        ended=game_ended,
        meta={"game": game.name},
    )
    return EpisodeResult(
        game.name,
        game.task_type,
        first.task,
        current["observation"].won,
        len(outcome.history),
        time.perf_counter() - started,
        outcome.message,
        game.grammar,
        sum(not record.success and not sent for record, sent in zip(history, played, strict=True)),
        sum(not record.success and sent for record, sent in zip(history, played, strict=True)),
        outcome.history,
        outcome.decisions,
    )


@dataclass(frozen=True)
class AlfworldPlayers:
    """Games played as `hgpo alfworld eval` plays them: a picklable recipe for the text env and planner, so
    each Ray worker (policies/sharding.py) builds its own."""

    planner: str  # a planner of the alfworld world: expert, searcher, llm
    llm: LLMConfig | None
    max_steps: int = 50  # the game's command budget

    @contextmanager
    def open(self) -> Iterator[Callable[[GameEntry], EpisodeResult]]:
        from policies.alfworld.planners import EXPERT_PLAN_PLANNERS
        from policies.worlds import make_planner

        planner = make_planner(self.planner, self.llm, domain="alfworld")
        with_expert = self.planner in EXPERT_PLAN_PLANNERS
        env = AlfworldTextEnv(max_steps=self.max_steps, expert=with_expert)
        try:
            yield lambda game: run_episode(env, game, planner, with_expert)
        finally:
            env.close()


@dataclass(frozen=True)
class GameDemos:
    won: bool
    records: list[dict[str, Any]]  # one per labelled decision (demo_record, with the learner's subgoal)
    dropped: int  # labels left out as a difference in search order only


@dataclass(frozen=True)
class AlfworldDemoPlayers:
    """Games played for `hgpo alfworld demos`: `expert` plays and labels its own decisions, or with `learner`
    (DAgger) the LLM planner plays and `expert` labels every state it reaches. A picklable recipe, so each
    Ray worker (policies/sharding.py) builds its own env and planners."""

    expert: str  # searcher or expert
    learner: LLMConfig | None = None
    drop_search_order: bool = False  # with a learner: leave out labels that differ in search order only
    max_steps: int = 50

    @contextmanager
    def open(self) -> Iterator[Callable[[GameEntry], GameDemos]]:
        from policies.alfworld.planners import search_order_only
        from policies.planning.dagger import ExpertLabelledPlanner
        from policies.worlds import make_planner

        prompts = PromptBuilder.for_domain(AlfworldDomain())
        expert = make_planner(self.expert, None, domain="alfworld")
        learner = make_planner("llm", self.learner, domain="alfworld") if self.learner is not None else None
        skip = search_order_only if self.drop_search_order else None
        env = AlfworldTextEnv(max_steps=self.max_steps, expert=True)

        def play(game: GameEntry) -> GameDemos:
            records: list[dict[str, Any]] = []

            def record(  # type: ignore[no-untyped-def]
                instruction, view, history, subgoal, choice=None
            ) -> None:
                row = demo_record(game, instruction, view, history, subgoal, prompts)
                if learner is not None:
                    row["learner_subgoal"] = str(choice) if choice else None
                records.append(row)

            if learner is None:
                return GameDemos(run_episode(env, game, expert, True, on_decision=record).won, records, 0)
            player = ExpertLabelledPlanner(learner, expert, record, skip)
            return GameDemos(run_episode(env, game, player, True).won, records, player.skipped)

        try:
            yield play
        finally:
            env.close()


def demo_record(
    game: GameEntry,
    instruction: str,
    view: AlfworldView,
    history: tuple[StepRecord, ...],
    subgoal: Subgoal,
    prompts: PromptBuilder,
) -> dict[str, Any]:
    """One behaviour-cloning record: what the planner saw, as raw fields and as the LLM planner's own chat
    messages for the alfworld domain, and what the expert chose."""
    domain = AlfworldDomain()
    messages = prompts.messages(domain, instruction, view, history)
    return {
        "game": game.name,
        "task_type": game.task_type,
        "task": instruction,
        "observation": view.last,
        "history": [[str(s.subgoal), s.message] for s in history],
        "admissible_subgoals": [str(s) for s in valid_now(domain, view, instruction, history)],
        "expert_subgoal": str(subgoal),
        "messages": [dict(m) for m in messages],
    }
