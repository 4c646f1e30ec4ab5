"""ALFRED's real floor plans as the rooms of generated games, from the layouts the alfworld package ships.

`alfworld/gen/layouts/FloorPlanN-openable.json` lists a scene's receptacles with their positions (ALFRED's
ids, so their kinds and counts: three cabinets, one fridge, ...) and `FloorPlanN-objects.json` the object
types found in it. A few static receptacle types appear only in the object list (stove burners, toasters,
coffee machines, towel holders, most garbage cans): the layouts give no count for them, so a room has one of
each.
ALFWorld's valid_unseen split plays scenes 10, 219, 308 and 424: `SEEN_SCENES`, ALFRED's training scenes
without those four, furnish training games, and `UNSEEN_SCENES` evaluation games only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import alfworld.gen
from alfworld.gen import constants

LAYOUTS = Path(alfworld.gen.__file__).parent / "layouts"
UNSEEN_SCENES: tuple[int, ...] = (10, 219, 308, 424)
SEEN_SCENES: tuple[int, ...] = tuple(sorted(set(constants.TRAIN_SCENE_NUMBERS) - set(UNSEEN_SCENES)))
LAMPS = ("DeskLamp", "FloorLamp")
# Receptacle kinds a room is furnished with: ALFWorld's, less the ones an agent carries (bowls, pots, ...).
STATIC_RECEPTACLES = frozenset(constants.VAL_RECEPTACLE_OBJECTS) - set(constants.MOVABLE_RECEPTACLES)
# Object kinds an agent can pick up: what fits in some receptacle, sliced pieces aside.
PICKUPABLE = frozenset(
    otype
    for contents in constants.VAL_RECEPTACLE_OBJECTS.values()
    for otype in contents
    if "Sliced" not in otype and otype in constants.OBJECTS
) - set(LAMPS)


@dataclass(frozen=True)
class FloorPlan:
    """One ALFRED scene: its number, kind of room, receptacles and the object types found there."""

    scene: int
    scene_type: str  # as in alfworld.gen.constants.SCENE_TYPE: Kitchen, LivingRoom, Bedroom, Bathroom
    receptacles: dict[str, int]  # receptacle type -> instances, in the layout's order
    object_types: tuple[str, ...]  # pickupable object types, sorted
    lamps: tuple[str, ...]  # DeskLamp and/or FloorLamp when the scene has them

    @property
    def name(self) -> str:
        return f"FloorPlan{self.scene}"


def _receptacle_type(alfred_id: str) -> str:
    """'Cabinet|+00.65|+00.48|+00.24' -> 'Cabinet'; 'Sink|-00.70|+00.93|-00.65|SinkBasin' -> 'SinkBasin'."""
    parts = alfred_id.split("|")
    return parts[-1] if parts[-1].endswith("Basin") else parts[0]


def _read(path: Path) -> Any:
    if not path.is_file():
        raise FileNotFoundError(
            f"floor plan file {path} is missing: alfworld 0.4.x ships them as {LAYOUTS}/FloorPlanN-*.json"
        )
    return json.loads(path.read_text())


@cache
def floor_plan(scene: int) -> FloorPlan:
    """The scene `scene` as its two layout files describe it; FileNotFoundError names a missing file."""
    scene_type = next((kind for kind, numbers in constants.SCENE_TYPE.items() if scene in numbers), None)
    if scene_type is None:
        raise ValueError(f"no ALFRED scene {scene}: scenes are 1-30, 201-230, 301-330 and 401-430")
    openable = _read(LAYOUTS / f"FloorPlan{scene}-openable.json")
    objects = set(_read(LAYOUTS / f"FloorPlan{scene}-objects.json"))
    receptacles: dict[str, int] = {}
    for alfred_id in openable:
        rtype = _receptacle_type(alfred_id)
        if rtype in STATIC_RECEPTACLES:
            receptacles[rtype] = receptacles.get(rtype, 0) + 1
    for rtype in sorted(objects & STATIC_RECEPTACLES - set(receptacles)):
        receptacles[rtype] = 1
    return FloorPlan(
        scene,
        scene_type,
        receptacles,
        tuple(sorted(objects & PICKUPABLE)),
        tuple(lamp for lamp in LAMPS if lamp in objects),
    )
