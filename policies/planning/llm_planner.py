"""The LLM planner: prompt from the domain's templates, one answer from a language model (constrained to the
valid subgoals where the backend can), parsed and validated; an invalid answer is re-asked with the reason a
bounded number of times, then the step fails with a PlannerError that says what the model said and why it
was refused.

While a subgoal executes, the planner can prefill the next decision's prompt (`anticipate`), and while no task
runs, the next task's prompt up to its instruction (`warm`): see there.

With `llm.goal_parse` (a `GoalDomain`), the first decision of a task starts by asking the model to write the
instruction as the domain's goal (re-asked with the reason while it is unusable, as subgoals are); every
decision of the task then shows that goal with what of it holds, and the trace of the first lists the goal's
attempts before the subgoal's."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from policies.planning.backends import Completion, LanguageModel, ModelError
from policies.planning.decisions import Attempt, DecisionTrace, Message
from policies.planning.domain import GoalDomain, PlanningDomain, valid_now
from policies.planning.llm_config import LLMConfig
from policies.planning.parsing import DONE, format_subgoal, validate_output
from policies.planning.planner import PlannerError, PlanningContext, StepRecord
from policies.planning.prompting import PromptBuilder
from sim.subgoal import Subgoal

LOG = logging.getLogger(__name__)
INSTRUCTION_MARK = "\x00instruction\x00"
"""Stands for the instruction in a prompt warmed before it is known; the prompt is cut where it begins."""


class LLMPlanner:
    """Plans with a language model over a planning domain; `last_trace` records the last decision."""

    name = "llm"

    def __init__(self, domain: PlanningDomain[Any], model: LanguageModel, config: LLMConfig) -> None:
        self.domain = domain
        self.model = model
        self.config = config
        if config.goal_parse and not isinstance(domain, GoalDomain):
            raise ValueError(f"llm.goal_parse: the {domain.name} domain cannot write a goal; set it false")
        self.prompts = PromptBuilder.for_domain(domain, config.history_k, goals=config.goal_parse)
        self.last_trace: DecisionTrace | None = None
        self._goal: tuple[str, Any] | None = None  # (instruction, its written goal) of the task in progress
        self._anticipation: threading.Thread | None = None
        self._warmed: str | None = None  # the observation text warmed since the last decision

    @property
    def constrained(self) -> bool:
        return self.config.constrained and self.model.constrains

    def anticipate(self, context: PlanningContext[Any], subgoal: Subgoal) -> None:
        """Start prefilling, in the background while `subgoal` executes, the prompt that the next decision
        will have if `subgoal` succeeds as intended: the domain's predicted observation and `subgoal`
        succeeded in the history, built as `next_subgoal` builds it (with `llm.anticipate`; a domain that
        cannot predict leaves it). Exact: the next decision reuses only the tokens its real prompt shares
        with the predicted one, as the prefix cache always does, so a wrong prediction costs only time.
        The next `next_subgoal` waits for it first (that wait counts in its latency), so the model never
        runs for two threads at once; a failure here is logged and dropped, never the decision's."""
        self.settle()
        if self.config.anticipate:
            self._start(self._prefill_next, context, subgoal)

    def warm(self, state: Any) -> bool:
        """While no task runs: start prefilling, in the background, the prompt of a task's first decision
        in observation `state` up to its instruction, not yet known (the system prompt, the skills and,
        where the domain's template puts it first, the observation), so that the decision computes only
        its instruction, history and answer (with `llm.anticipate`). Returns at once, starting nothing
        while a preparation runs (call again) or for the observation text warmed since the last decision:
        a caller may call it for every observation; whether it started one. Exact as `anticipate`: a
        decision reuses only the tokens its real prompt shares, so a scene changed since costs only time."""
        if not self.config.anticipate or (self._anticipation and self._anticipation.is_alive()):
            return False
        text = self.domain.render_observation(state)
        if text == self._warmed:
            return False
        self._warmed = text
        self._start(self._prefill_before_instruction, text)
        return True

    def _start(self, prefill: Callable[..., None], *args: Any) -> None:
        self.settle()
        self._anticipation = threading.Thread(target=prefill, args=args, name="anticipate", daemon=True)
        self._anticipation.start()

    def _prefill_before_instruction(self, observation_text: str) -> None:
        try:
            if self.config.goal_parse:  # a task's first call writes its goal
                messages = self.prompts.parse_messages(self.domain, INSTRUCTION_MARK, observation_text)
            else:
                messages = self.prompts.compose(self.domain, INSTRUCTION_MARK, observation_text, ())
            self.model.prefill(messages, upto=INSTRUCTION_MARK)
        except Exception:  # it only saves time: the first decision runs without it
            LOG.warning("prefilling the prompt of the scene while idle failed", exc_info=True)

    def _prefill_next(self, context: PlanningContext[Any], subgoal: Subgoal) -> None:
        try:
            observation = self.domain.predict_observation(context.state, subgoal)
            if observation is None:
                return
            history = (*context.history, StepRecord(subgoal, True, ""))
            # the goal's progress as it is now: a stale line only shortens the prefix reused
            goal = self._goal_text(context) if self._goal is not None else None
            self.model.prefill(
                self.prompts.compose(self.domain, context.instruction, observation, history, goal)
            )
        except Exception:  # it only saves time: the next decision runs without it
            LOG.warning("anticipating the decision after %s failed", format_subgoal(subgoal), exc_info=True)

    def settle(self) -> None:
        """Wait for the anticipation in flight, if any."""
        if self._anticipation is not None:
            self._anticipation.join()
            self._anticipation = None

    def next_subgoal(self, context: PlanningContext[Any]) -> Subgoal | None:
        self.settle()
        self._warmed = None  # the decisions that follow move the prefix cache on
        observation = context.state
        valid = valid_now(
            self.domain, observation, context.instruction, context.history, self.config.task_rules
        )
        finish = self.domain.finish_allowed(observation)
        choices = [format_subgoal(subgoal) for subgoal in valid] + ([DONE] if finish else [])

        def explain(subgoal: Subgoal) -> str:
            why = self.config.task_rules and self.domain.futile(subgoal, context.instruction, context.history)
            return why or self.domain.explain_invalid(subgoal, observation)

        attempts: list[Attempt] = []
        check = None
        try:
            goal = None
            if self.config.goal_parse:
                self._ensure_goal(context, attempts)
                goal = self._goal_text(context)
            messages = self.prompts.messages(
                self.domain, context.instruction, observation, context.history, goal
            )
            for _ in range(self.config.max_reasks + 1):
                started = time.perf_counter()
                completion = self.model.complete(messages, choices if self.constrained else None)
                check = validate_output(completion.text, valid, explain, finish)
                attempts.append(self._attempt(messages, completion, check.valid, check.error, started))
                if check.valid:
                    break
                messages = self.prompts.reask_messages(messages, completion.text, check.error)
        except ModelError as err:
            raise PlannerError(f"model {self.model.description} failed: {err}") from err
        finally:
            self.last_trace = DecisionTrace(
                model=self.model.description,
                domain=self.domain.name,
                observation=self.domain.render_observation(observation),
                valid_subgoals=tuple(choices),
                constrained=self.constrained,
                attempts=tuple(attempts),
            )
        assert check is not None
        if not check.valid:
            raise PlannerError(
                f"no valid subgoal in {len(attempts)} answers; the last, {attempts[-1].output[:120]!r}, "
                f"was refused: {check.error}"
            )
        return check.subgoal

    def _attempt(
        self, messages: list[Message], completion: Completion, valid: bool, error: str, started: float
    ) -> Attempt:
        stats = getattr(self.model, "last_stats", None)  # the transformers backend's
        latency_ms = 1000 * (time.perf_counter() - started)
        reused = stats.reused_tokens if stats is not None else 0
        return Attempt(
            tuple(messages), completion.prompt_text, completion.text, valid, error, latency_ms, reused
        )

    def _ensure_goal(self, context: PlanningContext[Any], attempts: list[Attempt]) -> None:
        """Have the model write the goal of a task's first decision (or of an instruction it has not read);
        each call is appended to `attempts`. PlannerError when no answer is usable."""
        if context.history and self._goal is not None and self._goal[0] == context.instruction:
            return
        assert isinstance(self.domain, GoalDomain)
        self._goal = None
        observation_text = self.domain.render_observation(context.state)
        messages = self.prompts.parse_messages(self.domain, context.instruction, observation_text)
        error = ""
        for _ in range(self.config.max_reasks + 1):
            started = time.perf_counter()
            completion = self.model.complete(messages, None, self.config.max_goal_tokens)
            try:
                goal = self.domain.parse_goal(completion.text, context.state)
            except ValueError as err:
                error = str(err)
                attempts.append(self._attempt(messages, completion, False, error, started))
                messages = self.prompts.reask_messages(messages, completion.text, error, goal=True)
                continue
            attempts.append(self._attempt(messages, completion, True, "", started))
            self._goal = (context.instruction, goal)
            return
        raise PlannerError(
            f"no usable goal in {len(attempts)} answers; the last, {attempts[-1].output[:120]!r}, "
            f"was refused: {error}"
        )

    def _goal_text(self, context: PlanningContext[Any]) -> str:
        assert isinstance(self.domain, GoalDomain) and self._goal is not None
        return self.domain.render_goal(self._goal[1], context.state)
