"""Prompts from template files: each world's `<domain.prompt>.system.txt` and `.user.txt` beside its domain
(placeholders `$skills`, `$observation`, `$progress`, `$instruction`, `$history`, `$k`) and the domain-neutral
`prompts/reask.txt` here (`$error`). Rendering is pure: the same context always gives the same messages."""

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
PLACEHOLDERS = frozenset({"skills", "observation", "progress", "instruction", "history", "k", "error"})


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
class PromptBuilder:
    """The chat messages for one decision, from a domain's templates."""

    system: string.Template
    user: string.Template
    reask: string.Template
    history_k: int = 4

    @classmethod
    def for_domain(cls, domain: PlanningDomain[Any], history_k: int = 4) -> PromptBuilder:
        return cls(
            system=_load(domain.prompt.with_name(f"{domain.prompt.name}.system.txt")),
            user=_load(domain.prompt.with_name(f"{domain.prompt.name}.user.txt")),
            reask=_load(PROMPTS_DIR / "reask.txt"),
            history_k=history_k,
        )

    def messages(
        self,
        domain: PlanningDomain[Any],
        instruction: str,
        observation: object,
        history: Sequence[StepRecord],
    ) -> list[Message]:
        return self.compose(domain, instruction, domain.render_observation(observation), history)

    def compose(
        self,
        domain: PlanningDomain[Any],
        instruction: str,
        observation_text: str,
        history: Sequence[StepRecord],
    ) -> list[Message]:
        """The messages for an observation already written as text (a predicted one, for anticipation)."""
        values = {
            "skills": "\n".join(f"- {s.signature}: {s.description}" for s in domain.skills()),
            "observation": observation_text,
            "progress": domain.render_progress(instruction, history),
            "instruction": instruction,
            "history": render_history(history, self.history_k),
            "k": str(self.history_k),
        }
        return [
            Message(role="system", content=self.system.substitute(values).strip()),
            Message(role="user", content=self.user.substitute(values).strip()),
        ]

    def reask_messages(self, messages: Sequence[Message], answer: str, error: str) -> list[Message]:
        """The conversation so far, the invalid answer, and a request to answer again saying why."""
        return [
            *messages,
            Message(role="assistant", content=answer),
            Message(role="user", content=self.reask.substitute(error=error).strip()),
        ]
