"""Planner backends by exact name: `expert` (the scripted oracle) and `llm` (a language model)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from policies.planning.llm_config import LLMConfig
from policies.planning.llm_planner import LLMPlanner
from policies.planning.planner import ExpertPlannerBackend, Planner


def _expert(_config: LLMConfig) -> Planner:
    return ExpertPlannerBackend()


PLANNERS: Mapping[str, Callable[[LLMConfig], Planner]] = {"expert": _expert, "llm": LLMPlanner.from_config}
"""Planner name -> constructor from the LLM configuration (which the expert ignores)."""


def make_planner(name: str, llm: LLMConfig | None = None) -> Planner:
    """Build a planner once; the LLM planner loads its model here (ModelError when it cannot)."""
    if name not in PLANNERS:
        raise ValueError(f"unknown planner {name!r}; known: {', '.join(sorted(PLANNERS))}")
    return PLANNERS[name](llm or LLMConfig())
