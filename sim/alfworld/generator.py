"""Authoring ALFWorld games: a seeded household and task written in ALFWorld's own file format.

A game is a folder with `traj_data.json` (task type and targets, as ALFRED writes them) and `game.tw-pddl`
(the PDDL domain, the text grammar with the task filled in, the PDDL problem, `solvable` and the planner's
`walkthrough`), which is what `AlfredTWEnv` and `alfworld-generate` read and write. Object kinds, what fits
where and which objects heat, cool or clean come from ALFWorld's tables; goals from its goal library. The
grammar is alfworld's own `alfred.twl2`, in its words or reworded into another known grammar's (`grammar`).
A room is one of our room kinds (`rooms.ROOM_KINDS`) furnished at random, or one of ALFRED's real floor plans
(`floor_plans`) with its own receptacles and object types, each object type there 1 to
`constants.MAX_NUM_OF_OBJ_INSTANCES` times and the task's object 1 to `constants.PICKUP_REPEAT_MAX` times, as
ALFRED's generator furnishes its scenes.
The official data set cannot be downloaded here, so this is how the project gets real ALFWorld games.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from alfworld.gen import constants, goal_library
from alfworld.info import ALFRED_PDDL_PATH, ALFRED_TWL2_PATH

from sim.alfworld.floor_plans import LAMPS, STATIC_RECEPTACLES, FloorPlan, floor_plan
from sim.alfworld.grammar import CANONICAL, CommandGrammar, rewrite
from sim.alfworld.rooms import LAMP_STANDS, ROOM_KINDS, TASK_TYPES, RoomKind

LAMP = "DeskLamp"
# Each placing task needs an appliance and an object the appliance acts on.
APPLIANCE = {
    "pick_clean_then_place_in_recep": ("SinkBasin", "Cleanable"),
    "pick_heat_then_place_in_recep": ("Microwave", "Heatable"),
    "pick_cool_then_place_in_recep": ("Fridge", "Coolable"),
}
ACTION_FACTS = {"Cleanable": "cleanable", "Heatable": "heatable", "Coolable": "coolable"}
OPENABLE = set(constants.OPENABLE_CLASS_LIST)
DEFAULT_GRAMMAR = CANONICAL  # the words of the `alfred.twl2` alfworld 0.4 ships
RECEPTACLE_TYPES = {rtype for kind in ROOM_KINDS.values() for rtype in kind.receptacles} | STATIC_RECEPTACLES


def fits(receptacle_type: str, object_type: str) -> bool:
    return object_type in constants.VAL_RECEPTACLE_OBJECTS.get(receptacle_type, ())


@dataclass(frozen=True)
class GameSpec:
    """Everything a game file is written from. Ids follow ALFRED's mangling (`Type_bar_N`), which the
    demangler turns into the names players see ("cabinet 3")."""

    name: str
    task_type: str
    room: str
    object_target: str
    parent_target: str  # "" for look_at_obj_in_light
    toggle_target: str  # "" unless look_at_obj_in_light
    description: str
    receptacles: tuple[tuple[str, str], ...]  # (id, receptacle type)
    objects: tuple[tuple[str, str, str], ...]  # (id, object type, id of the receptacle it is in)

    def traj_data(self) -> dict[str, object]:
        return {
            "task_type": self.task_type,
            "task_id": self.name,
            "scene": {"room": self.room, "generator": "hgpo", **_scene_fields(self.room)},
            "pddl_params": {
                "object_target": self.object_target,
                "parent_target": self.parent_target,
                "toggle_target": self.toggle_target,
                "mrecep_target": "",
                "object_sliced": False,
            },
            "turk_annotations": {"anns": [{"task_desc": self.description}]},
        }

    def problem(self) -> str:
        locations = {rid: f"loc_bar_{i + 1}" for i, (rid, _) in enumerate(self.receptacles)}
        rtypes = {rtype for _, rtype in self.receptacles}
        otypes = {otype for _, otype, _ in self.objects}
        # Every type a goal or the domain may name, each once (Mug is an object type, Cabinet a receptacle's).
        declared = [f"{t}Type - otype" for t in sorted(set(constants.OBJECTS) - RECEPTACLE_TYPES)]
        declared += [f"{t}Type - rtype" for t in sorted(RECEPTACLE_TYPES)]
        declared += [f"{oid} - object" for oid, _, _ in self.objects]
        declared += [f"{rid} - receptacle" for rid, _ in self.receptacles]
        declared += ["loc_bar_0 - location", *(f"{loc} - location" for loc in locations.values())]
        init = ["(atLocation agent1 loc_bar_0)"]
        for rid, rtype in self.receptacles:
            init += [f"(receptacleType {rid} {rtype}Type)", f"(receptacleAtLocation {rid} {locations[rid]})"]
            if rtype in OPENABLE:
                init.append(f"(openable {rid})")
        init += [
            f"(canContain {rt}Type {ot}Type)"
            for rt in sorted(rtypes)
            for ot in sorted(otypes)
            if fits(rt, ot)
        ]
        for oid, otype, rid in self.objects:
            init += [
                f"(objectType {oid} {otype}Type)",
                f"(inReceptacle {oid} {rid})",
                f"(objectAtLocation {oid} {locations[rid]})",
            ]
            init.append(f"(toggleable {oid})" if otype in LAMPS else f"(pickupable {oid})")
            init += [
                f"({fact} {oid})"
                for group, fact in ACTION_FACTS.items()
                if otype in constants.VAL_ACTION_OBJECTS[group]
            ]
        goal = goal_library.gdict[self.task_type]["pddl"].replace("#", "-")
        goal = goal.format(obj=self.object_target, recep=self.parent_target, toggle=self.toggle_target)
        lines = [
            f"(define (problem {self.name})",
            "(:domain alfred)",
            "(:objects",
            "agent1 - agent",
            *declared,
            ")",
            "(:init",
            *init,
            ")",
            goal,  # the goal library's text also closes the `define`
        ]
        return "\n".join(lines) + "\n"

    def game_data(
        self, walkthrough: list[str] | None, grammar: CommandGrammar = DEFAULT_GRAMMAR
    ) -> dict[str, object]:
        # alfworld's add_task_to_grammar picks its template with the global `random`; the description is
        # chosen here with the game's own generator instead, and put where that function puts it.
        twl2 = Path(ALFRED_TWL2_PATH)
        text = rewrite(twl2.read_text(), grammar, twl2).replace("UNKNOWN GOAL", self.description)
        return {
            "pddl_domain": Path(ALFRED_PDDL_PATH).read_text(),
            "grammar": text,
            "pddl_problem": self.problem(),
            "solvable": walkthrough is not None,
            "walkthrough": walkthrough,
        }

    def write(
        self, folder: Path, walkthrough: list[str] | None, grammar: CommandGrammar = DEFAULT_GRAMMAR
    ) -> Path:
        """Write the game's two files in `grammar`'s words; returns the path of `game.tw-pddl`."""
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "traj_data.json").write_text(json.dumps(self.traj_data(), indent=1))
        game_file = folder / "game.tw-pddl"
        game_file.write_text(json.dumps(self.game_data(walkthrough, grammar)))
        return game_file


def receptacle_id(rtype: str, k: int) -> str:
    """ALFRED's id of a receptacle. Basins are parts of their fixture ("Sink|..|SinkBasin"): the demangler
    names them from the (lower-cased) fixture plus "basin", so a plain "SinkBasin" id would show as
    "sinkbasinbasin"."""
    if rtype.endswith("Basin"):
        return f"{rtype.removesuffix('Basin')}_bar_{k}_bar_{rtype}"
    return f"{rtype}_bar_{k}"


def _scene_fields(room: str) -> dict[str, object]:
    """ALFRED's own scene fields for a game in one of its floor plans ('FloorPlan10'); none for our kinds."""
    number = room.removeprefix("FloorPlan")
    return {"floor_plan": room, "scene_num": int(number)} if number.isdigit() else {}


class _Room:
    """Receptacle instances of one room, with ids, and the object types it may hold: a room kind's sampled
    counts and every type that fits, or a floor plan's counts and the types found in that scene."""

    def __init__(self, name: str, counts: dict[str, int], plan: FloorPlan | None = None) -> None:
        self.name, self.plan = name, plan
        self.receptacles = [
            (receptacle_id(rtype, k), rtype) for rtype, count in counts.items() for k in range(1, count + 1)
        ]
        self.types = {rtype for _, rtype in self.receptacles}
        found = {otype for rtype in self.types for otype in constants.VAL_RECEPTACLE_OBJECTS.get(rtype, ())}
        found = {t for t in found if "Sliced" not in t and t in constants.OBJECTS}
        self.object_types = sorted(found & set(plan.object_types) if plan else found)

    @classmethod
    def of_kind(cls, kind: RoomKind, rng: random.Random) -> _Room:
        return cls(kind.name, {rtype: rng.randint(lo, hi) for rtype, (lo, hi) in kind.receptacles.items()})

    @classmethod
    def of_plan(cls, plan: FloorPlan) -> _Room:
        return cls(plan.name, plan.receptacles, plan)

    def holders(self, otype: str, exclude: set[str]) -> list[str]:
        return [rid for rid, rtype in self.receptacles if rtype not in exclude and fits(rtype, otype)]

    def lamp(self, rng: random.Random) -> str | None:
        """The lamp a look task switches on: one the scene has, a desk lamp in a room kind; None: none."""
        if self.plan is None:
            return LAMP
        return rng.choice(self.plan.lamps) if self.plan.lamps else None

    def target_count(self, task_type: str, rng: random.Random) -> int:
        pick_two = task_type == "pick_two_obj_and_place"
        if self.plan is None:
            return rng.randint(2, 3) if pick_two else rng.randint(1, 2)
        return rng.randint(2 if pick_two else 1, constants.PICKUP_REPEAT_MAX)

    def distractor_types(self, target: str, rng: random.Random) -> Iterator[str]:
        """The object types of the other objects, one entry an object: a room kind's 4-10 at random; a floor
        plan's every type of the scene, each 1 to MAX_NUM_OF_OBJ_INSTANCES times. Drawn as the caller
        iterates, so a seed's room-kind games stay the ones it made before floor plans existed."""
        others = [t for t in self.object_types if t != target]
        if self.plan is None:
            return (rng.choice(others) for _ in range(rng.randint(4, 10)))
        return (t for t in others for _ in range(rng.randint(1, constants.MAX_NUM_OF_OBJ_INSTANCES)))


def _place(rng: random.Random, holders: list[str], prefer_closed: bool) -> str:
    """A receptacle for an object; closed containers first when asked (the agent must open them)."""
    closed = [rid for rid in holders if rid.split("_bar_")[0] in OPENABLE]  # no basin opens
    return rng.choice(closed if prefer_closed and closed else holders)


def _room(task_type: str, rng: random.Random, scenes: tuple[int, ...]) -> _Room | None:
    """A room where `task_type` may happen (ALFRED's GOALS_VALID): a room kind, or one of `scenes`."""
    valid = constants.GOALS_VALID[task_type]
    if not scenes:
        return _Room.of_kind(rng.choice([k for k in ROOM_KINDS.values() if k.scene_type in valid]), rng)
    plans = [plan for plan in map(floor_plan, scenes) if plan.scene_type in valid]
    return _Room.of_plan(rng.choice(plans)) if plans else None


def sample_game(
    task_type: str, rng: random.Random, name: str, scenes: tuple[int, ...] = ()
) -> GameSpec | None:
    """One game of `task_type` in a room kind, or in one of ALFRED's floor plans `scenes` when given; None
    when the sampled room cannot host the task (the caller retries)."""
    if task_type not in TASK_TYPES:
        raise ValueError(f"unknown task type {task_type!r}; known: {', '.join(TASK_TYPES)}")
    room = _room(task_type, rng, scenes)
    if room is None:
        raise ValueError(f"none of the scenes {list(scenes)} is a room where {task_type} happens")
    otypes = room.object_types
    toggle, parent = "", ""
    if task_type == "look_at_obj_in_light":
        stands = [rid for rid, rtype in room.receptacles if rtype in LAMP_STANDS]
        lamp = room.lamp(rng)
        if not stands or lamp is None or not otypes:
            return None
        toggle, target = lamp, rng.choice(otypes)
        start_exclude: set[str] = set()
    else:
        appliance, group = APPLIANCE.get(task_type, ("", ""))
        if appliance and appliance not in room.types:
            return None
        candidates = [
            (rtype, otype)
            for rtype in sorted(room.types - {appliance})
            for otype in otypes
            if fits(rtype, otype)
            and (not group or otype in constants.VAL_ACTION_OBJECTS[group])
            and room.holders(otype, {rtype})
        ]
        if not candidates:
            return None
        parent, target = rng.choice(candidates)
        start_exclude = {parent}
    holders = room.holders(target, start_exclude)
    if not holders:
        return None
    count = room.target_count(task_type, rng)
    prefer_closed = rng.random() < 0.5
    objects = [
        (f"{target}_bar_{k}", target, _place(rng, holders, prefer_closed)) for k in range(1, count + 1)
    ]
    if toggle:
        stands = [rid for rid, rtype in room.receptacles if rtype in LAMP_STANDS]
        objects.append((f"{toggle}_bar_1", toggle, rng.choice(stands)))
    for k, otype in enumerate(room.distractor_types(target, rng)):
        # Distractors never sit where the goal wants the target, so no game starts solved.
        spots = room.holders(otype, {parent} if parent else set())
        if spots:
            objects.append((f"{otype}_bar_{100 + k}", otype, rng.choice(spots)))
    template = rng.choice(goal_library.gdict[task_type]["templates"])
    description = template.format(obj=target.lower(), recep=parent.lower(), toggle=toggle.lower(), mrecep="")
    return GameSpec(
        name=name,
        task_type=task_type,
        room=room.name,
        object_target=target,
        parent_target=parent,
        toggle_target=toggle,
        description=description,
        receptacles=tuple(room.receptacles),
        objects=tuple(objects),
    )
