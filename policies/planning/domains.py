"""Planning domains by exact name: the worlds an LLM planner can plan in (see domain.py for the contract).

To add a world, implement `PlanningDomain` for its observation type in a module of its own and add one
line here; its prompt templates go to policies/planning/prompts/<domain.prompt>.{system,user}.txt.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from policies.planning.domain import PlanningDomain
from policies.planning.tabletop_domain import TabletopDomain


def _alfworld() -> PlanningDomain[Any]:
    from policies.planning.alfworld_domain import AlfworldDomain  # imports ALFWorld only when asked for

    return AlfworldDomain()


DOMAINS: Mapping[str, Callable[[], PlanningDomain[Any]]] = {
    "tabletop": TabletopDomain,
    "alfworld": _alfworld,
}


def make_domain(name: str) -> PlanningDomain[Any]:
    """The registered domain `name`; an unknown name raises ValueError listing the known ones."""
    if name not in DOMAINS:
        raise ValueError(f"unknown planning domain {name!r}; known: {', '.join(sorted(DOMAINS))}")
    return DOMAINS[name]()
