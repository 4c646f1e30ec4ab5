"""Task families: for a seed, what the goal is (atoms over the scene's predicates), where things start, and
the parts of the goal an instruction names (its slots, worded by `sim.tabletop.phrasing`).

The five single-skill families (reach, pick_place, push, stack, sort) draw exactly what they always drew, so
their tasks, seeds and instructions are unchanged. The composed families combine those skills: several blocks
onto a plate, towers of three and four blocks, clearing a plate, swapping two blocks' plates, and blocks named
by how they relate to the scene ("the block closest to the right plate").

A composed family's combinations (which blocks, in which order, which plates) are split like its phrasings: a
fixed fifth of them, chosen by a hash of their names, is held out of every training set (`combinations`).
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from sim.tabletop.goal import Atom
from sim.tabletop.layout import Layout, LayoutRanges, on_plates, sample_blocks, sample_layout, sample_plates
from sim.tabletop.model import BLOCKS, PLATES
from sim.tabletop.phrasing import Assignment, Blocks, Ref, Slot, Split, Tower

PUSH_CORRIDOR = 0.08
"""Other blocks keep this far from the line a pushed block travels along (m)."""
PUSH_RUN_UP = 0.08
"""Length of the pusher's approach behind the pushed block, kept clear as well (m)."""
HELDOUT_SHARE = 0.2
"""Share of a composed family's combinations held out of training."""
REFERENCE_MARGIN = 0.03
"""A relational reference is drawn only where the block it names beats the runner-up by this much (m)."""


@dataclass(frozen=True)
class Draft:
    """A family's draw for one seed: the instruction's slots, the layout and the goal atoms in order."""

    slots: Mapping[str, Slot | str]
    layout: Layout
    goal: tuple[Atom, ...]


Builder = Callable[[np.random.Generator, LayoutRanges, Split | None], Draft]
C = TypeVar("C", bound=Hashable)


def _choose(rng: np.random.Generator, names: Sequence[str]) -> str:
    return names[int(rng.integers(len(names)))]


def combinations(family: str, candidates: Sequence[C], split: Split | None) -> list[C]:
    """The candidates of a split: all (None), the held-out share or the rest; which are held out depends on
    their names only, never on a seed."""
    if split is None:
        return list(candidates)
    ranked = sorted(candidates, key=lambda c: zlib.crc32(f"{family}:{c}".encode()))
    cut = max(1, round(HELDOUT_SHARE * len(ranked)))
    held = set(ranked[:cut])
    return [c for c in candidates if (c in held) == (split == "heldout")]


def _combination(rng: np.random.Generator, family: str, candidates: Sequence[C], split: Split | None) -> C:
    options = combinations(family, candidates, split)
    return options[int(rng.integers(len(options)))]


def segment_distance(point: np.ndarray, start: np.ndarray, end: np.ndarray) -> float:
    """Distance from a point to the segment start-end."""
    span = end - start
    t = np.clip(np.dot(point - start, span) / np.dot(span, span), 0.0, 1.0)
    return float(np.linalg.norm(point - (start + t * span)))


def other_plate(plate: str) -> str:
    return PLATES[1 - PLATES.index(plate)]


# The single-skill families: each draws what it has always drawn, in the same order.


def reach(rng: np.random.Generator, ranges: LayoutRanges, split: Split | None) -> Draft:
    obj = _choose(rng, BLOCKS)
    return Draft({"obj": obj}, sample_layout(rng, ranges), (Atom("above", (obj,)),))


def pick_place(rng: np.random.Generator, ranges: LayoutRanges, split: Split | None) -> Draft:
    obj, plate = _choose(rng, BLOCKS), _choose(rng, PLATES)
    return Draft({"obj": obj, "plate": plate}, sample_layout(rng, ranges), (Atom("on", (obj, plate)),))


def push(rng: np.random.Generator, ranges: LayoutRanges, split: Split | None) -> Draft:
    obj, plate = _choose(rng, BLOCKS), _choose(rng, PLATES)
    plates = sample_plates(rng, ranges)
    goal = np.array(plates[plate])

    def clear_path(name: str, xy: np.ndarray, placed: Mapping[str, np.ndarray]) -> bool:
        # The pushed block is placed first; the others keep off its path and the pusher's run-up.
        if name == obj:
            return True
        start = placed[obj]
        run_up = start - PUSH_RUN_UP * (goal - start) / np.linalg.norm(goal - start)
        return segment_distance(xy, run_up, goal) >= PUSH_CORRIDOR

    order = (obj, *(b for b in BLOCKS if b != obj))
    layout = sample_blocks(rng, ranges, plates, clear_path, order)
    return Draft({"obj": obj, "plate": plate}, layout, (Atom("on", (obj, plate)),))


def stack(rng: np.random.Generator, ranges: LayoutRanges, split: Split | None) -> Draft:
    top, base = (BLOCKS[i] for i in rng.choice(len(BLOCKS), size=2, replace=False))
    return Draft({"top": top, "base": base}, sample_layout(rng, ranges), (Atom("on", (top, base)),))


def sort(rng: np.random.Generator, ranges: LayoutRanges, split: Split | None) -> Draft:
    assignment = {block: PLATES[int(rng.integers(len(PLATES)))] for block in BLOCKS}
    layout = sample_layout(rng, ranges)
    groups = tuple(
        (plate, tuple(b for b in BLOCKS if assignment[b] == plate))
        for plate in PLATES
        if plate in assignment.values()
    )
    goal = tuple(Atom("on", (block, plate)) for block, plate in assignment.items())
    return Draft({"assign": Assignment(groups)}, layout, goal)


# The composed families.

_SUBSETS = [c for k in (2, 3, 4) for c in itertools.combinations(BLOCKS, k)]


def multi_place(rng: np.random.Generator, ranges: LayoutRanges, split: Split | None) -> Draft:
    blocks, plate = _combination(rng, "multi_place", list(itertools.product(_SUBSETS, PLATES)), split)
    named = tuple(blocks[i] for i in rng.permutation(len(blocks)))
    goal = tuple(Atom("on", (block, plate)) for block in named)
    return Draft({"blocks": Blocks(named), "plate": plate}, sample_layout(rng, ranges), goal)


_TOWERS = [*itertools.permutations(BLOCKS, 3), *itertools.permutations(BLOCKS, 4)]


def tower(rng: np.random.Generator, ranges: LayoutRanges, split: Split | None) -> Draft:
    """Bottom-up: the goal's atoms are in building order, each block on the one below it."""
    order = _combination(rng, "tower", _TOWERS, split)
    goal = tuple(Atom("on", (top, base)) for base, top in itertools.pairwise(order))
    return Draft({"tower": Tower(order)}, sample_layout(rng, ranges), goal)


_SLOT_PAIRS = ((0, 2), (1, 3), (0, 3))
"""Slots two blocks may share a plate in: at least two slots apart, room for the open fingers."""


def _slots(rng: np.random.Generator, plate: str, blocks: Sequence[str]) -> dict[str, tuple[str, int]]:
    """Distinct, well-spaced slots of one plate for one or two blocks."""
    if len(blocks) == 1:
        return {blocks[0]: (plate, int(rng.integers(4)))}
    pair = _SLOT_PAIRS[int(rng.integers(len(_SLOT_PAIRS)))]
    return {block: (plate, index) for block, index in zip(blocks, pair, strict=True)}


_CLEARINGS = [
    (plate, blocks) for plate in PLATES for k in (1, 2) for blocks in itertools.combinations(BLOCKS, k)
]


def clear_plate(rng: np.random.Generator, ranges: LayoutRanges, split: Split | None) -> Draft:
    """One or two blocks start on the source plate, maybe one more on the target; the source's go across."""
    source, blocks = _combination(rng, "clear_plate", _CLEARINGS, split)
    target = other_plate(source)
    slots = _slots(rng, source, blocks)
    rest = [b for b in BLOCKS if b not in blocks]
    if rng.random() < 0.5:
        slots.update(_slots(rng, target, [_choose(rng, rest)]))
    layout = on_plates(rng, ranges, sample_plates(rng, ranges), slots)
    goal = tuple(Atom("on", (block, target)) for block in blocks)
    return Draft({"source": source, "target": target}, layout, goal)


_SWAPS = list(itertools.permutations(BLOCKS, 2))


def swap(rng: np.random.Generator, ranges: LayoutRanges, split: Split | None) -> Draft:
    """The first block starts on the left plate, the second on the right; they change plates. The
    instruction names them in either order."""
    left, right = _combination(rng, "swap", _SWAPS, split)
    slots = {**_slots(rng, PLATES[0], [left]), **_slots(rng, PLATES[1], [right])}
    layout = on_plates(rng, ranges, sample_plates(rng, ranges), slots)
    a, b = (left, right) if rng.random() < 0.5 else (right, left)
    goal = (Atom("on", (left, PLATES[1])), Atom("on", (right, PLATES[0])))
    return Draft({"a": a, "b": b}, layout, goal)


_REFERENCES = [
    *(
        (Ref(kind, plate), target)
        for kind in ("closest", "farthest")
        for plate in PLATES
        for target in PLATES
    ),
    *((Ref(kind), target) for kind in ("leftmost", "rightmost") for target in PLATES),
    *((Ref("on", plate), other_plate(plate)) for plate in PLATES),
]


def referent(
    ref: Ref, blocks: Mapping[str, np.ndarray], plates: Mapping[str, np.ndarray]
) -> tuple[str, float]:
    """The table block a spatial reference names, and its margin over the runner-up (m). Left is +y, the
    robot's left; distances are between centres on the table."""
    if ref.kind in ("closest", "farthest"):
        score = {n: float(np.linalg.norm(xy - plates[ref.plate])) for n, xy in blocks.items()}
        sign = 1.0 if ref.kind == "closest" else -1.0
    elif ref.kind in ("leftmost", "rightmost"):
        score = {n: float(xy[1]) for n, xy in blocks.items()}
        sign = -1.0 if ref.kind == "leftmost" else 1.0
    else:
        raise ValueError(
            f"{ref.kind!r} is not a spatial reference; known: closest, farthest, leftmost, rightmost"
        )
    ranked = sorted(score, key=lambda n: sign * score[n])
    return ranked[0], abs(score[ranked[1]] - score[ranked[0]]) if len(ranked) > 1 else np.inf


def relational(rng: np.random.Generator, ranges: LayoutRanges, split: Split | None) -> Draft:
    """A block named by a relation to the scene goes on a plate; layouts are redrawn until the relation
    picks one block by a clear margin."""
    ref, target = _combination(rng, "relational", _REFERENCES, split)
    if ref.kind == "on":
        block = _choose(rng, BLOCKS)
        layout = on_plates(rng, ranges, sample_plates(rng, ranges), _slots(rng, ref.plate, [block]))
        return Draft({"ref": ref, "target": target}, layout, (Atom("on", (block, target)),))
    for _ in range(ranges.max_tries):
        layout = sample_layout(rng, ranges)
        blocks = {n: np.array(pose[:2]) for n, pose in layout.blocks.items()}
        plates = {n: np.array(xy) for n, xy in layout.plates.items()}
        block, margin = referent(ref, blocks, plates)
        if margin >= REFERENCE_MARGIN:
            return Draft({"ref": ref, "target": target}, layout, (Atom("on", (block, target)),))
    raise RuntimeError(f"no layout in {ranges.max_tries} tries makes {ref} unambiguous; loosen LayoutRanges")
