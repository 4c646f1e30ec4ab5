"""ALFWorld planners behind the project's `Planner` protocol, on the `alfworld` planning domain's observation
(`AlfworldView`), registered under the `alfworld` world in `policies.worlds`.

`expert` maps the first command of ALFWorld's planner expert (Fast Downward on the game's PDDL, replanned
from the current state) onto the subgoal vocabulary: the oracle for generated games. `searcher` is that
expert without its knowledge of where things are hidden, the source of demonstrations. `llm` is the
project's `LLMPlanner` on the `alfworld` domain (built by the registry). `search_order_only` is the
ALFWorld labels DAgger (`policies.planning.dagger`) may leave out.
"""

from __future__ import annotations

import re

from policies.alfworld.domain import AlfworldView, holding
from policies.planning.decisions import DecisionTrace
from policies.planning.domain import Subgoal
from policies.planning.planner import PlannerError, PlanningContext, StepRecord
from sim.alfworld import subgoal_for_command
from sim.alfworld.text_state import SearchState, kind, search_state

EXPERT_PLAN_PLANNERS = frozenset({"expert", "searcher"})
"""Planners that read ALFWorld's planner expert's plan: their env must run the expert."""


def _expert_plan(context: PlanningContext[AlfworldView], planner: str) -> tuple[str, ...]:
    plan = context.state.expert_plan
    if plan is None:
        raise PlannerError(
            f"the {planner} planner needs the world's expert plan: run the bridge or env with expert enabled"
        )
    return plan


def _subgoal(command: str) -> Subgoal:
    subgoal = subgoal_for_command(command)
    if subgoal is None:
        raise PlannerError(f"the planner expert's command {command!r} is outside the skill vocabulary")
    return subgoal


class ExpertAlfworldPlanner:
    """Follows ALFWorld's planner expert; None when its plan is empty (the task is done)."""

    name = "expert"
    last_trace: DecisionTrace | None = None

    def next_subgoal(self, context: PlanningContext[AlfworldView]) -> Subgoal | None:
        plan = _expert_plan(context, self.name)
        return _subgoal(plan[0]) if plan else None


_FETCH = re.compile(r"^(?:take (?P<taken>.+?) from .+|use (?P<used>.+))$")


class SearchingAlfworldPlanner:
    """ALFWorld's planner expert as an agent that cannot see inside the room would follow it.

    The expert walks straight to the one receptacle hiding what it needs (the apple in the garbage can),
    which nothing in the planner's observation tells; demonstrations of that teach a guess. This planner
    goes where the expert goes only for what it has seen there (or for a receptacle the room lists, as a
    destination). Otherwise it searches: it takes or uses the first thing of the kind the expert needs
    wherever it sees one, opens a closed receptacle it stands at, and walks to the next receptacle the room
    lists after the last one it visited. Each of its decisions follows from the instruction, the room and
    the game's answers, so it can be imitated. None when the expert's plan is empty (the task is done)."""

    name = "searcher"
    last_trace: DecisionTrace | None = None

    def next_subgoal(self, context: PlanningContext[AlfworldView]) -> Subgoal | None:
        plan = _expert_plan(context, self.name)
        if not plan:
            return None
        if not plan[0].startswith("go to "):
            return _subgoal(plan[0])
        fetch = self._fetched_there(plan)
        if fetch is None:
            return _subgoal(plan[0])  # a destination: the room lists it
        wanted = fetch.group("taken") or fetch.group("used")
        answers = [record.message for record in context.history] + [context.state.last]
        state = search_state(context.state.room, answers)
        wanted_kind, skill = kind(wanted), "take" if fetch.group("taken") else "toggle"
        found = next((t for t in state.visible_here if kind(t) == wanted_kind), None)
        if found is not None and state.here is not None:
            return Subgoal(skill, (found, state.here) if skill == "take" else (found,))
        known = next((at for thing, at in state.seen_at.items() if kind(thing) == wanted_kind), None)
        if known is not None and known != state.here:
            return Subgoal("go_to", (known,))
        if state.closed_here and state.here is not None:
            return Subgoal("open", (state.here,))
        return self._next_receptacle(state) or _subgoal(plan[0])

    @staticmethod
    def _fetched_there(plan: tuple[str, ...]) -> re.Match[str] | None:
        """What the expert walks (plan[0]) to take or use, before its next walk; None: nothing."""
        for command in plan[1:]:
            if command.startswith("go to "):
                return None
            if fetch := _FETCH.match(command):
                return fetch
        return None

    @staticmethod
    def _next_receptacle(state: SearchState) -> Subgoal | None:
        order = state.receptacles
        last = state.visited[-1] if state.visited else None
        start = order.index(last) + 1 if last in order else 0
        for candidate in order[start:] + order[:start]:
            if candidate not in state.visited:
                return Subgoal("go_to", (candidate,))
        return None


def search_order_only(label: Subgoal | None, choice: Subgoal | None, history: tuple[StepRecord, ...]) -> bool:
    """DAgger's skip rule here: learner and expert walk to different receptacles with nothing in hand, so
    they differ only in the order they search. The searcher's order follows the receptacles it visited
    over the whole game, which the prompt's last k steps do not show, so as a label it is noise (162 of the
    1,230 states the shipped adapter reached in 60 new training games), while the labels that lose games
    are actions at the right place."""
    return (
        label is not None
        and choice is not None
        and label.skill == choice.skill == "go_to"
        and label != choice
        and holding(history)[0] is None
    )
