"""The project's planning worlds, registered by exact name from outside the planning package (legged_gym's
`envs/__init__.py` manner): `tabletop` (policies/tabletop) and `alfworld` (policies/alfworld, imported only
when asked for, since importing ALFWorld is slow). To add a world, give it a package of its own beside these
two (its `PlanningDomain` and planners) and register it here.

Commands, nodes and trainers build planners and domains through `make_planner` and `make_domain`; an unknown
name raises a ValueError listing the known ones."""

from __future__ import annotations

from typing import Any

from policies.planning.domain import PlanningDomain
from policies.planning.llm_config import LLMConfig
from policies.planning.planner import Planner
from policies.planning.registry import World, WorldRegistry, llm_planner
from policies.tabletop.domain import TabletopDomain
from policies.tabletop.planners import ExpertPlannerBackend


def _alfworld_domain() -> PlanningDomain[Any]:
    from policies.alfworld.domain import AlfworldDomain  # imports ALFWorld only when asked for

    return AlfworldDomain()


def _alfworld_expert(_config: LLMConfig, _domain: PlanningDomain[Any]) -> Planner:
    from policies.alfworld.planners import ExpertAlfworldPlanner

    return ExpertAlfworldPlanner()


def _alfworld_searcher(_config: LLMConfig, _domain: PlanningDomain[Any]) -> Planner:
    from policies.alfworld.planners import SearchingAlfworldPlanner

    return SearchingAlfworldPlanner()


def _tabletop_expert(_config: LLMConfig, _domain: PlanningDomain[Any]) -> Planner:
    return ExpertPlannerBackend()


WORLDS = WorldRegistry()
WORLDS.register(World("tabletop", TabletopDomain, {"expert": _tabletop_expert, "llm": llm_planner}))
WORLDS.register(
    World(
        "alfworld",
        _alfworld_domain,
        {"expert": _alfworld_expert, "searcher": _alfworld_searcher, "llm": llm_planner},
    )
)

DEFAULT_WORLD = "tabletop"


def make_domain(name: str) -> PlanningDomain[Any]:
    """The world `name`'s planning domain."""
    return WORLDS.make_domain(name)


def make_planner(name: str, llm: LLMConfig | None = None, domain: str | None = None) -> Planner:
    """Build the planner `name` of the world `domain` (default: the LLM configuration's `domain`) once; the
    LLM planner loads its model here (ModelError or ValueError saying what to do if it cannot)."""
    return WORLDS.make_planner(name, llm, domain or (llm.domain if llm else DEFAULT_WORLD))


__all__ = ["DEFAULT_WORLD", "WORLDS", "make_domain", "make_planner"]
