"""The instruction grammar: many phrasings of each task family's goal, split into training and held-out ones.

A phrasing is a template: `[a|b]` picks one of its words, `{slot}` or `{slot:form}` names a part of the goal
(an object, a list of blocks, a tower, a plate assignment, a reference to a block) in one of its forms:

    "[put|place] the {obj:colour} [block|cube] on the {plate}" -> "place the red cube on the left plate"

Each family's first phrasing is its canonical one: the sentence the task has always produced (`make_task`
without a split). The `train` phrasings are the only ones demonstrations and RL ever see; `heldout` ones are
kept for evaluation, so that a score on them measures language understanding, not recall. The split is data:
`PHRASINGS` below is the whole of it, and tests check that training never draws a held-out template.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

Split = Literal["train", "heldout"]
SPLITS: tuple[Split, ...] = ("train", "heldout")


def words(name: str) -> str:
    """An object name as words: red_block -> 'red block'."""
    return name.replace("_", " ")


def listing(items: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def colour(name: str) -> str:
    """red_block -> 'red'; left_plate -> 'left'."""
    return name.split("_", 1)[0]


@dataclass(frozen=True)
class Obj:
    """One object. Forms: '' (red block), colour (red), cube (red cube)."""

    name: str

    def __format__(self, form: str) -> str:
        if form == "colour":
            return colour(self.name)
        if form == "cube":
            return f"{colour(self.name)} cube"
        if form:
            raise ValueError(f"unknown form {form!r} of an object")
        return words(self.name)


@dataclass(frozen=True)
class Blocks:
    """Several blocks. Forms: '' (the red block and the blue block), colours (red and blue), the (the red and
    the blue block)."""

    names: tuple[str, ...]

    def __format__(self, form: str) -> str:
        if form == "colours":
            return listing([colour(n) for n in self.names])
        if form == "the":
            return f"{listing([f'the {colour(n)}' for n in self.names])} block"
        if form:
            raise ValueError(f"unknown form {form!r} of a list of blocks")
        return listing([f"the {words(n)}" for n in self.names])


@dataclass(frozen=True)
class Tower:
    """Blocks from the bottom up. Forms: ontop (the blue block on the yellow block, then the red block on
    top), pairs (..., then the red block on the blue block), up (the yellow, blue and red blocks), bottom (the
    yellow block), rest (then the blue block, then the red block)."""

    names: tuple[str, ...]

    def __format__(self, form: str) -> str:
        pairs = [f"the {words(top)} on the {words(base)}" for base, top in itertools.pairwise(self.names)]
        if form == "ontop":
            return ", then ".join([*pairs[:-1], f"the {words(self.names[-1])} on top"])
        if form == "pairs":
            return ", then ".join(pairs)
        if form == "up":
            return f"the {listing([colour(n) for n in self.names])} blocks"
        if form == "bottom":
            return f"the {words(self.names[0])}"
        if form == "rest":
            return ", ".join(f"then the {words(n)}" for n in self.names[1:])
        raise ValueError(f"unknown form {form!r} of a tower")


@dataclass(frozen=True)
class Assignment:
    """Blocks to plates (sort). Forms: '' (the red and green blocks on the left plate and the blue block on
    the right plate), cubes (the same with cube/cubes), to (red and green to the left plate, blue to the
    right plate)."""

    plates: tuple[tuple[str, tuple[str, ...]], ...]
    """(plate, blocks) in plate order; plates with no block left out."""

    def __format__(self, form: str) -> str:
        parts = []
        for plate, blocks in self.plates:
            colours = listing([colour(b) for b in blocks])
            if form == "to":
                parts.append(f"{colours} to the {words(plate)}")
                continue
            noun = "cube" if form == "cubes" else "block"
            if form not in ("", "cubes"):
                raise ValueError(f"unknown form {form!r} of a plate assignment")
            parts.append(f"the {colours} {noun if len(blocks) == 1 else noun + 's'} on the {words(plate)}")
        return (", " if form == "to" else " and ").join(parts)


@dataclass(frozen=True)
class Ref:
    """A block named by how it relates to the scene: kind closest, farthest (to a plate), leftmost,
    rightmost, on (a plate). Rendered by `REFERENCES`, in the phrasing's split."""

    kind: str
    plate: str = ""


Slot = Obj | Blocks | Tower | Assignment | Ref


@dataclass(frozen=True)
class Phrasing:
    """One template of a family's instructions and the split it belongs to."""

    family: str
    index: int
    text: str
    split: Split

    @property
    def id(self) -> str:
        return f"{self.family}/{self.index}"


def _family(name: str, train: Sequence[str], heldout: Sequence[str]) -> tuple[Phrasing, ...]:
    texts = [(text, "train") for text in train] + [(text, "heldout") for text in heldout]
    return tuple(Phrasing(name, i, text, split) for i, (text, split) in enumerate(texts))  # type: ignore[arg-type]


BLOCK = "[block|cube]"
PHRASINGS: Mapping[str, tuple[Phrasing, ...]] = {
    "reach": _family(
        "reach",
        train=(
            "move the gripper above the {obj}",
            "[go|move] to the {obj:colour} " + BLOCK,
            "hover [over|above] the {obj:colour} " + BLOCK,
            "position the gripper [over|above] the {obj}",
            "[please|could you] move your hand above the {obj:colour} " + BLOCK,
            "reach for the {obj:colour} " + BLOCK + " without grasping it",
            "put the gripper right above the {obj}",
            "[hold|keep] the gripper above the {obj:colour} " + BLOCK,
            "[can you|could you] hover above the {obj}?",
            "above the {obj:colour} " + BLOCK + ", [move|put] the gripper",
            "the gripper should be above the {obj}",
            "only reach the {obj}, do not pick it up",
            "the gripper [needs to|has to] [hover|be] above the {obj}",
        ),
        heldout=(
            "bring the gripper over the {obj:colour} " + BLOCK,
            "I want the gripper hovering above the {obj}",
            "the {obj:colour} " + BLOCK + ": hover [over|above] it",
        ),
    ),
    "pick_place": _family(
        "pick_place",
        train=(
            "put the {obj} on the {plate}",
            "[place|set|put] the {obj:colour} " + BLOCK + " [on|onto] the {plate}",
            "pick up the {obj} and [put|place|set] it [on|onto] the {plate}",
            "[move|transfer] the {obj:colour} " + BLOCK + " to the {plate}",
            "[please|kindly] put the {obj} on the {plate}",
            "the {obj} goes on the {plate}",
            "set the {obj:cube} down on the {plate}",
            "[can you|could you] put the {obj} on the {plate}?",
            "I need the {obj:colour} " + BLOCK + " on the {plate}",
            "the {plate} is where the {obj} should go",
            "take the {obj:cube} and [put|place] it on the {plate}",
            "[pick up|take] the {obj}, then [put|set] it [on|onto] the {plate}",
            "the {obj:colour} " + BLOCK + " [needs to|has to|should] end up on the {plate}",
            "the {plate} should [hold|have] the {obj} on it",
        ),
        heldout=(
            "grab the {obj:colour} " + BLOCK + " and drop it [on|onto] the {plate}",
            "can you [lift|carry] the {obj} over to the {plate}?",
            "[on|onto] the {plate}, [put|place] the {obj}",
        ),
    ),
    "push": _family(
        "push",
        train=(
            "push the {obj} onto the {plate}",
            "[push|slide|shove] the {obj:colour} " + BLOCK + " [onto|to] the {plate}",
            "move the {obj} onto the {plate} without [picking it up|lifting it|grasping it]",
            "[please|kindly] push the {obj} onto the {plate}",
            "[slide|push] the {obj} along the table onto the {plate}",
            "get the {obj:cube} onto the {plate} by pushing it",
            "without grasping it, [move|bring] the {obj} to the {plate}",
            "do not pick up the {obj}: [push|slide] it onto the {plate}",
            "[move|bring] the {obj:colour} " + BLOCK + " to the {plate}, but do not [grasp it|pick it up]",
            "[move|bring] the {obj} to the {plate} while it stays on the table",
            "onto the {plate}, push the {obj}",
            "[can you|could you] push the {obj:cube} to the {plate}?",
            "no grasping: [push|slide] the {obj:colour} " + BLOCK + " to the {plate}",
            "the {obj} [needs to|has to] reach the {plate} without leaving the table",
        ),
        heldout=(
            "without [picking it up|lifting it], get the {obj:colour} " + BLOCK + " onto the {plate}",
            "nudge the {obj} over to the {plate}",
            "keep the {obj} on the table and [push|slide] it to the {plate}",
        ),
    ),
    "stack": _family(
        "stack",
        train=(
            "stack the {top} on the {base}",
            "[put|place|set] the {top:colour} " + BLOCK + " [on|onto|on top of] the {base:colour} " + BLOCK,
            "stack the {top} [onto|on top of] the {base}",
            "pick up the {top} and [put|place] it on the {base}",
            "the {top} goes on top of the {base}",
            "[please|kindly] stack the {top:cube} on the {base:cube}",
            "[can you|could you] stack the {top} on the {base}?",
            "I want the {top} on top of the {base}",
            "stack the {top:colour} and {base:colour} blocks, the {top:colour} one on top",
            "the {base} [carries|holds] the {top} [on top|on it]",
            "the {top} [needs to|should] [go|end up] on the {base}",
            "with the {base} where it is, [put|stack] the {top} on it",
        ),
        heldout=(
            "[build|make] a stack with the {top:colour} " + BLOCK + " on the {base}",
            "I'd like the {top:colour} " + BLOCK + " resting on the {base:colour} one",
            "[on|onto] the {base}, stack the {top}",
        ),
    ),
    "sort": _family(
        "sort",
        train=(
            "sort the blocks: put {assign}",
            "sort the cubes: put {assign:cubes}",
            "put {assign}",
            "[please|kindly] place {assign}",
            "sort by colour: {assign:to}",
            "[can you|could you] sort the blocks? {assign:to}",
            "arrange the blocks: {assign}",
            "I need {assign}",
            "the blocks [should|need to] end up like this: {assign}",
            "by colour, [move|sort] them: {assign:to}",
        ),
        heldout=(
            "{assign}, please",
            "[organise|tidy up] the table: {assign:to}",
        ),
    ),
    "multi_place": _family(
        "multi_place",
        train=(
            "put {blocks} on the {plate}",
            "[place|set|move] the {blocks:colours} blocks [on|onto] the {plate}",
            "put {blocks:the} on the {plate}",
            "[please|kindly] move {blocks} to the {plate}",
            "the {plate} gets {blocks}",
            "[can you|could you] put {blocks} on the {plate}?",
            "the {blocks:colours} blocks [all|each] go on the {plate}",
            "on the {plate}, put {blocks}",
            "[pick up|take] {blocks} and put them on the {plate}",
            "{blocks} [need to|should] end up on the {plate}",
            "the {plate} should [hold|have] {blocks} on it",
        ),
        heldout=(
            "[gather|collect] the {blocks:colours} cubes on the {plate}",
            "{blocks}: all of them [on|onto] the {plate}",
        ),
    ),
    "tower": _family(
        "tower",
        train=(
            "build a tower: {tower:ontop}",
            "stack {tower:pairs}",
            "build a tower of {tower:up}, from the bottom up",
            "[make|build] a tower with {tower:bottom} at the bottom, {tower:rest}",
            "[please|kindly] stack {tower:pairs}",
            "[can you|could you] build a tower: {tower:ontop}?",
            "stack the blocks into a tower, {tower:bottom} first, {tower:rest}",
            "a tower of {tower:up}, bottom first",
            "I want a tower: {tower:pairs}",
            "bottom to top, [build|make] a tower of {tower:up}",
            "starting at the bottom, [stack|pile] {tower:up} into a tower",
            "a tower should have {tower:bottom} at the bottom, {tower:rest}",
        ),
        heldout=(
            "[make|build] a [stack|tower] from the bottom up out of {tower:up}",
            "put {tower:pairs}",
        ),
    ),
    "clear_plate": _family(
        "clear_plate",
        train=(
            "clear the {source}: move everything on it to the {target}",
            "[move|put] every block on the {source} onto the {target}",
            "empty the {source} onto the {target}",
            "take everything off the {source} and put it on the {target}",
            "nothing should stay on the {source}: move it all to the {target}",
            "[can you|could you] clear the {source} onto the {target}?",
            "move the blocks off the {source} and onto the {target}",
            "whatever is on the {source} [goes|moves] to the {target}",
            "the {source} has blocks on it: move [them|each of them] to the {target}",
            "leave nothing on the {source}; its blocks go on the {target}",
        ),
        heldout=(
            "the {source} must be empty: [put|move] its blocks on the {target}",
            "[transfer|shift] all the blocks from the {source} to the {target}",
        ),
    ),
    "swap": _family(
        "swap",
        train=(
            "swap the {a} and the {b}",
            "swap the {a:colour} and {b:colour} blocks",
            "exchange the plates of the {a} and the {b}",
            "put the {a} where the {b} is and the {b} where the {a} is",
            "[can you|could you] swap the {a} and the {b}?",
            "the {a} goes where the {b} is, and the {b} goes where the {a} is",
            "exchange the {a:colour} and {b:colour} blocks between the plates",
            "the {a} [needs to|should] end up on the plate of the {b}, and the {b} on its plate",
            "each of the {a:colour} and {b:colour} blocks [moves|goes] to the plate of the other",
        ),
        heldout=(
            "[switch|trade] the places of the {a:colour} and the {b:colour} " + BLOCK + "s",
            "the {a} and the {b} should swap plates",
        ),
    ),
    "relational": _family(
        "relational",
        train=(
            "put {ref} on the {target}",
            "[move|place|set] {ref} [onto|on] the {target}",
            "pick up {ref} and [put|place] it on the {target}",
            "[please|kindly] move {ref} to the {target}",
            "[can you|could you] put {ref} on the {target}?",
            "I need {ref} on the {target}",
            "on the {target}, put {ref}",
            "{ref} [needs to|has to|should] end up on the {target}",
            "{ref}: [put|move] it on the {target}",
            "the {target} is where {ref} should go",
        ),
        heldout=(
            "{ref} [goes|belongs] on the {target}",
            "take {ref} to the {target}",
        ),
    ),
}
"""Every family's phrasings; index 0 is the canonical one."""

REFERENCES: Mapping[Split, Mapping[str, tuple[str, ...]]] = {
    "train": {
        "closest": ("the block closest to the {plate}", "the " + BLOCK + " nearest to the {plate}"),
        "farthest": (
            "the block farthest from the {plate}",
            "the " + BLOCK + " farthest away from the {plate}",
        ),
        "leftmost": ("the leftmost block", "the " + BLOCK + " furthest to the left"),
        "rightmost": ("the rightmost block", "the " + BLOCK + " furthest to the right"),
        "on": ("the block on the {plate}", "the " + BLOCK + " that is on the {plate}"),
    },
    "heldout": {
        "closest": ("whichever block is nearest the {plate}",),
        "farthest": ("whichever block is furthest from the {plate}",),
        "leftmost": ("the block on the far left",),
        "rightmost": ("the block on the far right",),
        "on": ("the block sitting on the {plate}",),
    },
}
"""How a reference to a block is worded, per split (the canonical wording is each kind's first)."""

_CHOICE = re.compile(r"\[([^\[\]]*)\]")


def _choose_words(text: str, rng: np.random.Generator | None) -> str:
    """Resolve every `[a|b]`: the first option without an rng (canonical), else a random one."""

    def pick(match: re.Match[str]) -> str:
        options = match.group(1).split("|")
        return options[0] if rng is None else options[int(rng.integers(len(options)))]

    return _CHOICE.sub(pick, text)


def _reference(ref: Ref, split: Split, rng: np.random.Generator | None) -> str:
    wordings = REFERENCES[split][ref.kind]
    wording = wordings[0] if rng is None else wordings[int(rng.integers(len(wordings)))]
    return _choose_words(wording, rng).format(plate=words(ref.plate))


def phrasings(family: str, split: Split) -> tuple[Phrasing, ...]:
    """A family's phrasings in one split."""
    return tuple(p for p in PHRASINGS[family] if p.split == split)


def render(
    phrasing: Phrasing, slots: Mapping[str, Slot | str], rng: np.random.Generator | None = None
) -> str:
    """The instruction: the template with its words chosen (the first of each without an rng) and its slots
    filled; a plate or object given as a plain name renders as words."""
    values: dict[str, object] = {}
    for key, value in slots.items():
        if isinstance(value, Ref):
            values[key] = _reference(value, phrasing.split, rng)
        elif isinstance(value, str):
            values[key] = Obj(value)
        else:
            values[key] = value
    return _choose_words(phrasing.text, rng).format(**values)


def draw(family: str, split: Split | None, rng: np.random.Generator | None) -> Phrasing:
    """The canonical phrasing (split None), or one of the split's, drawn with rng."""
    if split is None or rng is None:
        return PHRASINGS[family][0]
    options = phrasings(family, split)
    return options[int(rng.integers(len(options)))]
