"""Room kinds of the generated households: which static receptacles a room has and how many of each.

The object and receptacle facts themselves (what fits where, what heats, cools, cleans, opens) come from
ALFWorld's own tables in `alfworld.gen.constants`; only the furnishing of a room kind is ours.
"""

from __future__ import annotations

from dataclasses import dataclass

TASK_TYPES: tuple[str, ...] = (
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)

# The column headings of the ReAct and GiGPO ALFWorld tables, in their order.
TASK_TYPE_LABELS: dict[str, str] = {
    "pick_and_place_simple": "Pick",
    "pick_clean_then_place_in_recep": "Clean",
    "pick_heat_then_place_in_recep": "Heat",
    "pick_cool_then_place_in_recep": "Cool",
    "look_at_obj_in_light": "Look",
    "pick_two_obj_and_place": "Pick2",
}


@dataclass(frozen=True)
class RoomKind:
    """A kind of room: receptacle type -> (fewest, most) instances; ALFRED's scene type name."""

    name: str
    scene_type: str  # as in alfworld.gen.constants.GOALS_VALID
    receptacles: dict[str, tuple[int, int]]


ROOM_KINDS: dict[str, RoomKind] = {
    room.name: room
    for room in (
        RoomKind(
            "kitchen",
            "Kitchen",
            {
                "Cabinet": (3, 6),
                "CounterTop": (1, 3),
                "Drawer": (1, 4),
                "Fridge": (1, 1),
                "Microwave": (1, 1),
                "SinkBasin": (1, 1),
                "StoveBurner": (2, 4),
                "DiningTable": (0, 1),
                "GarbageCan": (1, 1),
                "CoffeeMachine": (0, 1),
                "Toaster": (0, 1),
                "Shelf": (0, 2),
            },
        ),
        RoomKind(
            "livingroom",
            "LivingRoom",
            {
                "Sofa": (1, 1),
                "CoffeeTable": (1, 1),
                "SideTable": (1, 2),
                "Shelf": (0, 3),
                "TVStand": (0, 1),
                "Drawer": (1, 3),
                "Cabinet": (0, 2),
                "GarbageCan": (1, 1),
                "ArmChair": (0, 1),
                "Dresser": (0, 1),
                "Safe": (0, 1),
            },
        ),
        RoomKind(
            "bedroom",
            "Bedroom",
            {
                "Bed": (1, 1),
                "Desk": (0, 1),
                "Drawer": (2, 5),
                "Dresser": (0, 1),
                "SideTable": (1, 2),
                "Shelf": (0, 3),
                "GarbageCan": (1, 1),
                "Safe": (0, 1),
                "ArmChair": (0, 1),
            },
        ),
        RoomKind(
            "bathroom",
            "Bathroom",
            {
                "CounterTop": (1, 1),
                "SinkBasin": (1, 2),
                "Cabinet": (1, 4),
                "Drawer": (0, 3),
                "Toilet": (1, 1),
                "TowelHolder": (0, 1),
                "HandTowelHolder": (0, 1),
                "GarbageCan": (1, 1),
                "BathtubBasin": (0, 1),
                "ToiletPaperHanger": (0, 1),
                "Shelf": (0, 2),
            },
        ),
    )
}

# Receptacles a desk lamp stands on in look_at_obj_in_light games.
LAMP_STANDS: tuple[str, ...] = ("SideTable", "Desk", "Dresser")
