"""The ALFWorld closed loop: plan a subgoal, execute it, observe, replan — shared by in-process episodes
(evaluation, demonstrations, benchmark) and the planner node (only `observe` and `execute` differ)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from policies.alfworld.planners import (
    TextPlanner,
    TextPlannerError,
    TextPlanningContext,
    TextStep,
    planning_context,
)
from policies.planning.alfworld_domain import AlfworldDomain
from policies.planning.prompting import PromptBuilder
from sim.alfworld import (
    GameEntry,
    TextEnv,
    TextObservation,
    TextSubgoal,
    admissible_subgoals,
    execute_subgoal,
)


@dataclass
class LoopOutcome:
    won: bool
    message: str
    observation: TextObservation  # the last one
    history: list[TextStep] = field(default_factory=list)


# (context, chosen subgoal or None) for every planning decision: how demonstrations are recorded
DecisionHook = Callable[[TextPlanningContext, TextSubgoal | None], None]
# (observation, the planner expert's plan from it or None)
Observed = tuple[TextObservation, tuple[str, ...] | None]


def run_text_loop(
    planner: TextPlanner,
    first: Observed,
    execute: Callable[[TextSubgoal], tuple[TextStep, Observed]],
    max_subgoals: int,
    on_decision: DecisionHook | None = None,
) -> LoopOutcome:
    """Until won, the planner says done, or `max_subgoals` were tried (every subgoal tried counts, so a
    planner stuck on invalid subgoals ends too)."""
    (observation, plan), history = first, list[TextStep]()
    first_text = observation.text
    while not observation.done:
        if len(history) >= max_subgoals:
            return LoopOutcome(False, f"subgoal budget spent ({max_subgoals})", observation, history)
        context = TextPlanningContext(first_text, observation, tuple(history), plan)
        try:
            subgoal = planner.next_subgoal(context)
        except TextPlannerError as err:
            return LoopOutcome(False, f"planner {planner.name!r} failed: {err}", observation, history)
        if on_decision:
            on_decision(context, subgoal)
        if subgoal is None:
            verdict = "task done" if observation.won else "the task is not achieved"
            return LoopOutcome(observation.won, f"planner said done: {verdict}", observation, history)
        step, (observation, plan) = execute(subgoal)
        history.append(step)
    message = "won" if observation.won else f"step budget spent ({observation.steps} commands)"
    return LoopOutcome(observation.won, f"{message} after {len(history)} subgoals", observation, history)


@dataclass
class EpisodeResult:
    game: str
    task_type: str
    task: str
    won: bool
    steps: int  # subgoals tried, valid or not (each valid one is one game command)
    wall_s: float
    message: str
    history: list[TextStep] = field(default_factory=list)


def run_episode(
    env: TextEnv, game: GameEntry, planner: TextPlanner, on_decision: DecisionHook | None = None
) -> EpisodeResult:
    """One game in-process through `run_text_loop`, the env's step budget as the subgoal budget."""
    started = time.perf_counter()

    def observed(observation: TextObservation) -> Observed:
        return observation, env.expert_plan() if planner.needs_expert_plan else None

    state = {"observation": env.reset(game.path)}

    def execute(subgoal: TextSubgoal) -> tuple[TextStep, Observed]:
        outcome = execute_subgoal(env, state["observation"], subgoal)
        if outcome.observation is not None:
            state["observation"] = outcome.observation
        return TextStep(subgoal, outcome.success, outcome.message), observed(state["observation"])

    outcome = run_text_loop(planner, observed(state["observation"]), execute, env.max_steps, on_decision)
    return EpisodeResult(
        game.name,
        game.task_type,
        outcome.observation.task,
        outcome.won,
        len(outcome.history),
        time.perf_counter() - started,
        outcome.message,
        outcome.history,
    )


def demo_record(
    game: GameEntry, context: TextPlanningContext, subgoal: TextSubgoal, prompts: PromptBuilder
) -> dict[str, Any]:
    """One behaviour-cloning record: what the planner saw, as raw fields and as the LLM planner's own chat
    messages for the alfworld domain, and what the expert chose."""
    valid = admissible_subgoals(context.observation.admissible_commands)
    planning = planning_context(context)
    messages = prompts.messages(AlfworldDomain(), planning.instruction, planning.state, planning.history)
    return {
        "game": game.name,
        "task_type": game.task_type,
        "task": context.observation.task,
        "observation": context.observation.text,
        "history": [[str(s.subgoal), s.feedback] for s in context.history],
        "admissible_subgoals": [str(s) for s in valid],
        "expert_subgoal": str(subgoal),
        "messages": [dict(m) for m in messages],
    }
