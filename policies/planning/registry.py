"""Planner backends by domain and exact name: `expert` (the domain's oracle) and `llm` (a language model)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from policies.planning.llm_config import LLMConfig
from policies.planning.llm_planner import LLMPlanner
from policies.planning.planner import ExpertPlannerBackend, Planner


def _expert(_config: LLMConfig) -> Planner:
    return ExpertPlannerBackend()


def _alfworld_expert(_config: LLMConfig) -> Planner:
    from policies.alfworld.planners import ExpertAlfworldPlanner  # imports ALFWorld only when asked for

    return ExpertAlfworldPlanner()


def _alfworld_searcher(_config: LLMConfig) -> Planner:
    from policies.alfworld.planners import SearchingAlfworldPlanner

    return SearchingAlfworldPlanner()


def _alfworld_llm(config: LLMConfig) -> Planner:
    return LLMPlanner.from_config(replace(config, domain="alfworld"))


PLANNERS: Mapping[str, Mapping[str, Callable[[LLMConfig], Planner]]] = {
    "tabletop": {"expert": _expert, "llm": LLMPlanner.from_config},
    "alfworld": {"expert": _alfworld_expert, "searcher": _alfworld_searcher, "llm": _alfworld_llm},
}
"""Domain -> planner name -> constructor from the LLM configuration (which the experts ignore)."""


def make_planner(name: str, llm: LLMConfig | None = None, domain: str = "tabletop") -> Planner:
    """Build a planner once; the LLM planner loads its model here (ModelError when it cannot)."""
    if domain not in PLANNERS:
        raise ValueError(f"unknown planning domain {domain!r}; known: {', '.join(sorted(PLANNERS))}")
    known = PLANNERS[domain]
    if name not in known:
        raise ValueError(f"unknown {domain} planner {name!r}; known: {', '.join(sorted(known))}")
    return known[name](llm or LLMConfig())
