"""Worlds by exact name, each with its planning domain and its planners (legged_gym's task registry, verl's
`@register`): the planning package defines the registry and knows no world; each world is registered from
outside (the project's worlds in `policies/worlds.py`). An unknown name raises a ValueError listing the
known ones.

A world's planners are built from the LLM configuration (which scripted planners ignore) and the world's
domain; `llm_planner` is the one every world shares."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from policies.planning.backends import load_model
from policies.planning.domain import PlanningDomain
from policies.planning.llm_config import LLMConfig
from policies.planning.llm_planner import LLMPlanner
from policies.planning.planner import Planner

PlannerFactory = Callable[[LLMConfig, PlanningDomain[Any]], Planner]
"""(LLM configuration, the world's domain) -> a planner, built once (the LLM planner loads its model here)."""


def llm_planner(config: LLMConfig, domain: PlanningDomain[Any]) -> Planner:
    """The LLM planner on a world's domain; ModelError or ValueError saying what to do if the model fails."""
    return LLMPlanner(domain, load_model(config), config)


@dataclass(frozen=True)
class World:
    """A world as the planner sees it: its domain (built on demand, so a world's heavy imports wait until it
    is asked for) and its planners by exact name."""

    name: str
    domain: Callable[[], PlanningDomain[Any]]
    planners: Mapping[str, PlannerFactory] = field(default_factory=lambda: {"llm": llm_planner})


class WorldRegistry:
    """Worlds by exact name; register each once."""

    def __init__(self) -> None:
        self._worlds: dict[str, World] = {}

    def register(self, world: World) -> None:
        if world.name in self._worlds:
            raise ValueError(f"planning world {world.name!r} is registered already")
        self._worlds[world.name] = world

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self._worlds))

    def world(self, name: str) -> World:
        if name not in self._worlds:
            raise ValueError(f"unknown planning domain {name!r}; known: {', '.join(self.names)}")
        return self._worlds[name]

    def make_domain(self, name: str) -> PlanningDomain[Any]:
        """The world `name`'s planning domain."""
        return self.world(name).domain()

    def make_planner(self, name: str, llm: LLMConfig | None, domain: str) -> Planner:
        """Build the planner `name` of the world `domain` once (the LLM planner loads its model here)."""
        world = self.world(domain)
        if name not in world.planners:
            raise ValueError(f"unknown {domain} planner {name!r}; known: {', '.join(sorted(world.planners))}")
        return world.planners[name](replace(llm or LLMConfig(), domain=domain), world.domain())
