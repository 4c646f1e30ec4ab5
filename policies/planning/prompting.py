"""Prompts from template files: each world's `<domain.prompt>.system.txt` and `.user.txt` beside its domain
(placeholders `$skills`, `$observation`, `$progress`, `$instruction`, `$history`, `$k`) and the domain-neutral
`prompts/reask.txt` here (`$error`). Rendering is pure: the same context always gives the same messages.

A domain whose planner writes the goal first (`llm.goal_parse`, a `GoalDomain`) adds `.parse.system.txt`,
`.parse.user.txt` and `.parse.reask.txt` (the request for the goal, and again after an unusable one) and
`.goal.user.txt` (a decision's user message with `$goal`, the goal's atoms and their progress)."""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from policies.planning.decisions import Message
from policies.planning.domain import PlanningDomain
from policies.planning.parsing import format_subgoal
from policies.planning.planner import StepRecord

PROMPTS_DIR = Path(__file__).parent / "prompts"
PLACEHOLDERS = frozenset(
    {"skills", "observation", "progress", "instruction", "history", "k", "error", "goal"}
)


def _load(path: Path) -> string.Template:
    """A template file; unknown placeholders are an error at load time, not a silent blank at run time."""
    if not path.is_file():
        raise FileNotFoundError(f"prompt template {path} is missing")
    template = string.Template(path.read_text())
    unknown = set(template.get_identifiers()) - PLACEHOLDERS
    if unknown or not template.is_valid():
        raise ValueError(
            f"prompt template {path}: unknown or malformed placeholders {sorted(unknown)}; "
            f"known: {', '.join(sorted(PLACEHOLDERS))}"
        )
    return template


def render_history(history: Sequence[StepRecord], k: int) -> str:
    """The last k executed subgoals with their results, numbered from the start of the task."""
    if not history or k <= 0:
        return "(none yet)"
    first = max(0, len(history) - k)
    lines = []
    for index, record in enumerate(history[first:], start=first + 1):
        result = "succeeded" if record.success else f"failed: {record.message}"
        lines.append(f"{index}. {format_subgoal(record.subgoal)} -> {result}")
    return "\n".join(lines)


@dataclass(frozen=True)
class GoalTemplates:
    """A goal-parsing domain's extra templates: the request for the goal and a decision that shows it."""

    parse_system: string.Template
    parse_user: string.Template
    parse_reask: string.Template
    user: string.Template


@dataclass(frozen=True)
class PromptBuilder:
    """The chat messages for one decision, from a domain's templates."""

    system: string.Template
    user: string.Template
    reask: string.Template
    history_k: int = 4
    goal: GoalTemplates | None = None

    @classmethod
    def for_domain(
        cls, domain: PlanningDomain[Any], history_k: int = 4, goals: bool = False
    ) -> PromptBuilder:
        """The domain's templates; with `goals`, its goal templates as well (FileNotFoundError naming the
        missing file where the domain has none)."""
        stem = domain.prompt

        def load(suffix: str) -> string.Template:
            return _load(stem.with_name(f"{stem.name}.{suffix}.txt"))

        return cls(
            system=load("system"),
            user=load("user"),
            reask=_load(PROMPTS_DIR / "reask.txt"),
            history_k=history_k,
            goal=GoalTemplates(*map(load, ("parse.system", "parse.user", "parse.reask", "goal.user")))
            if goals
            else None,
        )

    def messages(
        self,
        domain: PlanningDomain[Any],
        instruction: str,
        observation: object,
        history: Sequence[StepRecord],
        goal: str | None = None,
    ) -> list[Message]:
        return self.compose(domain, instruction, domain.render_observation(observation), history, goal)

    def compose(
        self,
        domain: PlanningDomain[Any],
        instruction: str,
        observation_text: str,
        history: Sequence[StepRecord],
        goal: str | None = None,
    ) -> list[Message]:
        """The messages for an observation already written as text (a predicted one, for anticipation);
        with `goal` (the goal's atoms and progress, as text), the goal template's decision."""
        values = self._values(domain, instruction, observation_text) | {
            "progress": domain.render_progress(instruction, history),
            "history": render_history(history, self.history_k),
            "goal": goal or "",
        }
        user = self.user if goal is None else self._goal_templates().user
        return [
            Message(role="system", content=self.system.substitute(values).strip()),
            Message(role="user", content=user.substitute(values).strip()),
        ]

    def parse_messages(
        self, domain: PlanningDomain[Any], instruction: str, observation_text: str
    ) -> list[Message]:
        """The request to write the instruction as the domain's goal, in an observation written as text."""
        templates = self._goal_templates()
        values = self._values(domain, instruction, observation_text)
        return [
            Message(role="system", content=templates.parse_system.substitute(values).strip()),
            Message(role="user", content=templates.parse_user.substitute(values).strip()),
        ]

    def _values(self, domain: PlanningDomain[Any], instruction: str, observation_text: str) -> dict[str, str]:
        return {
            "skills": "\n".join(f"- {s.signature}: {s.description}" for s in domain.skills()),
            "observation": observation_text,
            "instruction": instruction,
            "k": str(self.history_k),
        }

    def _goal_templates(self) -> GoalTemplates:
        if self.goal is None:
            raise ValueError("this PromptBuilder has no goal templates: build it with goals=True")
        return self.goal

    def reask_messages(
        self, messages: Sequence[Message], answer: str, error: str, goal: bool = False
    ) -> list[Message]:
        """The conversation so far, the invalid answer (a subgoal, or with `goal` a written goal), and a
        request to answer again saying why."""
        reask = self._goal_templates().parse_reask if goal else self.reask
        return [
            *messages,
            Message(role="assistant", content=answer),
            Message(role="user", content=reask.substitute(error=error).strip()),
        ]
