"""Game sets on disk: finding the games of a folder (generated here or the official data set) and
generating solvable ones with train and evaluation splits that never share a game."""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sim.alfworld.contract import GameFileError
from sim.alfworld.env import AlfworldTextEnv, game_grammar, read_game_file
from sim.alfworld.floor_plans import SEEN_SCENES, UNSEEN_SCENES
from sim.alfworld.generator import DEFAULT_GRAMMAR, GameSpec, sample_game
from sim.alfworld.grammar import GRAMMARS, CommandGrammar
from sim.alfworld.rooms import TASK_TYPES

SPLITS = ("train", "valid_unseen")  # the official data set's names: `--games DIR/valid_unseen` works on both
MAX_TRIES_PER_GAME = 50


@dataclass(frozen=True)
class GameEntry:
    path: Path  # the game.tw-pddl file
    task_type: str
    name: str  # the game's folder, relative to the set's root
    grammar: str  # the name of its command grammar (sim/alfworld/grammar.py)

    @property
    def folder(self) -> Path:
        return self.path.parent


def discover_games(root: Path, task_types: tuple[str, ...] = TASK_TYPES) -> list[GameEntry]:
    """Every solvable game under `root`, in path order, found the way `AlfredTWEnv` finds them
    (`**/traj_data.json`, movable and sliced tasks skipped, games marked unsolvable skipped). A game whose
    files are missing or corrupt, or whose grammar the text skills do not know, is an error that names each
    such file."""
    root = Path(root)
    if not root.is_dir():
        raise GameFileError(f"game folder {root} does not exist: make one with `hgpo alfworld make-games`")
    games, problems = [], []
    for traj_path in sorted(root.rglob("traj_data.json")):
        folder = traj_path.parent
        if "movable" in str(folder) or "Sliced" in str(folder):
            continue
        try:
            task_type = json.loads(traj_path.read_text())["task_type"]
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as err:
            problems.append(f"{traj_path}: unreadable ({type(err).__name__}: {err})")
            continue
        if task_type not in task_types:
            continue
        path = folder / "game.tw-pddl"
        try:
            data = read_game_file(path)
            grammar = game_grammar(path, data)
        except GameFileError as err:
            problems.append(str(err))
            continue
        if data.get("solvable"):
            games.append(GameEntry(path, task_type, str(folder.relative_to(root)), grammar.name))
    if problems:
        raise GameFileError(f"{len(problems)} bad game(s) under {root}:\n  " + "\n  ".join(problems))
    if not games:
        raise GameFileError(f"no solvable games under {root} (looked for **/traj_data.json + game.tw-pddl)")
    return games


def _fingerprint(spec: GameSpec) -> str:
    return hashlib.sha256(spec.problem().replace(spec.name, "").encode()).hexdigest()


@dataclass
class GenerationReport:
    written: Counter[str] = field(default_factory=Counter)  # "split/task_type" -> games kept
    unsolvable: int = 0
    plan_lengths: list[int] = field(default_factory=list)


class PlannerCheck:
    """Solvability by ALFWorld's planner expert: its plan from the start, replayed to a win."""

    def __init__(self, max_steps: int) -> None:
        self._planner = AlfworldTextEnv(max_steps=max_steps, expert=True)
        self._player = AlfworldTextEnv(max_steps=max_steps)

    def walkthrough(self, game_file: Path) -> list[str] | None:
        self._planner.reset(game_file)
        plan = list(self._planner.expert_plan())
        if not plan:
            return None
        observation = self._player.reset(game_file)
        for command in plan:
            if observation.done:
                return None
            observation = self._player.step(command)
        return plan if observation.won else None

    def close(self) -> None:
        self._planner.close()
        self._player.close()


def make_games(
    out: Path,
    per_type: int,
    eval_per_type: int,
    seed: int,
    max_steps: int = 50,
    on_game: Callable[[str, str], None] | None = None,
    task_types: tuple[str, ...] = TASK_TYPES,
    grammar: str = DEFAULT_GRAMMAR.name,
    floor_plans: bool = False,
) -> GenerationReport:
    """Write `per_type` training and `eval_per_type` evaluation games of each task type under `out/train`
    and `out/valid_unseen` in the words of `grammar` (a name in `GRAMMARS`), each solved by the planner
    expert within `max_steps` before it is kept. With `floor_plans`, the rooms are ALFRED's scenes: the
    training games' from the seen scenes, the evaluation games' from valid_unseen's four, as ALFWorld splits
    them."""
    if per_type < 0 or eval_per_type < 0 or per_type + eval_per_type == 0:
        raise ValueError("ask for at least one game: --per-type and --eval-per-type must be >= 0, not both 0")
    unknown = set(task_types) - set(TASK_TYPES)
    if unknown or not task_types:
        raise ValueError(f"unknown task type(s) {sorted(unknown)}; known: {', '.join(TASK_TYPES)}")
    if grammar not in GRAMMARS:
        raise ValueError(f"unknown grammar {grammar!r}; known: {', '.join(GRAMMARS)}")
    report, seen = GenerationReport(), set[str]()
    check = PlannerCheck(max_steps)
    try:
        for split, count, scenes in zip(
            SPLITS, (per_type, eval_per_type), (SEEN_SCENES, UNSEEN_SCENES), strict=True
        ):
            for task_type in task_types:
                rng = random.Random(f"{seed}/{split}/{task_type}")
                for index in range(count):
                    spec = _solvable_game(
                        out / split,
                        task_type,
                        index,
                        rng,
                        seen,
                        check,
                        report,
                        GRAMMARS[grammar],
                        scenes if floor_plans else (),
                    )
                    if spec is None:
                        raise RuntimeError(
                            f"no solvable {task_type} game after {MAX_TRIES_PER_GAME} tries (seed {seed})"
                        )
                    report.written[f"{split}/{task_type}"] += 1
                    if on_game:
                        on_game(split, spec.name)
    finally:
        check.close()
    return report


def _solvable_game(
    root: Path,
    task_type: str,
    index: int,
    rng: random.Random,
    seen: set[str],
    check: PlannerCheck,
    report: GenerationReport,
    grammar: CommandGrammar,
    scenes: tuple[int, ...],
) -> GameSpec | None:
    for _ in range(MAX_TRIES_PER_GAME):
        spec = sample_game(task_type, rng, f"{task_type}-{root.name}-{index:04d}", scenes)
        if spec is None or _fingerprint(spec) in seen:
            continue
        folder = root / f"{task_type}-{spec.object_target}-{spec.parent_target or spec.toggle_target}-"
        folder = folder.with_name(folder.name + f"{spec.room}-{index:04d}")
        if folder.exists():
            shutil.rmtree(folder)
        game_file = spec.write(folder, None, grammar)
        walkthrough = check.walkthrough(game_file)
        if walkthrough is None:
            report.unsolvable += 1
            shutil.rmtree(folder)
            continue
        spec.write(folder, walkthrough, grammar)
        seen.add(_fingerprint(spec))
        report.plan_lengths.append(len(walkthrough))
        return spec
    return None
