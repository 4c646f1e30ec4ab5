"""Success per task type over a game set, summarized the way the ReAct and GiGPO papers tabulate ALFWorld."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from policies.alfworld.episodes import EpisodeResult
from sim.alfworld import TASK_TYPE_LABELS


def summarize(results: Sequence[EpisodeResult]) -> dict[str, Any]:
    """JSON-ready figures: overall and per-type success, mean steps (all, and won episodes), wall time."""
    per_type: dict[str, dict[str, Any]] = {}
    for task_type in TASK_TYPE_LABELS:
        mine = [r for r in results if r.task_type == task_type]
        won = sum(r.won for r in mine)
        per_type[task_type] = {
            "label": TASK_TYPE_LABELS[task_type],
            "games": len(mine),
            "won": won,
            "success_rate": won / len(mine) if mine else None,
        }
    won_results = [r for r in results if r.won]
    return {
        "games": len(results),
        "won": len(won_results),
        "success_rate": len(won_results) / len(results) if results else 0.0,
        "per_type": per_type,
        "mean_steps": sum(r.steps for r in results) / len(results) if results else 0.0,
        "mean_steps_won": sum(r.steps for r in won_results) / len(won_results) if won_results else None,
        "mean_episode_wall_s": sum(r.wall_s for r in results) / len(results) if results else 0.0,
        **_refusals(results),
        "grammars": {
            grammar: {"games": len(mine), "won": sum(r.won for r in mine), **_refusals(mine)}
            for grammar in sorted({r.grammar for r in results})
            for mine in [[r for r in results if r.grammar == grammar]]
        },
    }


def _refusals(results: Sequence[EpisodeResult]) -> dict[str, int]:
    """What the games refused: subgoals in all, those no admissible command says (never played) and the
    commands answered "Nothing happens.", and in how many games."""
    return {
        "refused": sum(r.refused for r in results),
        "not_admissible": sum(r.not_admissible for r in results),
        "nothing_happens": sum(r.nothing_happens for r in results),
        "games_with_refusals": sum(r.refused > 0 for r in results),
    }


_REFUSAL_HEADERS = ["refused", "not admissible", "nothing happens"]


def grammar_table(summary: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Headers and rows 'grammar | games | won | refused | not admissible | nothing happens | games with
    refusals' (the last row: all grammars): which words the games spoke and what they refused, so a mismatch
    between the skills and a game never reads as a weak planner (the official 0.2.x files admit no
    `move X to Y`)."""
    headers = ["grammar", "games", "won", *_REFUSAL_HEADERS, "games with refusals"]
    rows = [*summary["grammars"].items(), ("all", summary)]
    body = [
        [name, str(row["games"]), str(row["won"])]
        + [str(row[key]) for key in ("refused", "not_admissible", "nothing_happens", "games_with_refusals")]
        for name, row in rows
    ]
    return headers, body


def game_table(results: Sequence[EpisodeResult]) -> tuple[list[str], list[list[str]]]:
    """Headers and one row per game: 'game | type | grammar | won | steps | refused | not admissible |
    nothing happens', so every game says which grammar it spoke and what it refused."""
    headers = ["game", "type", "grammar", "won", "steps", *_REFUSAL_HEADERS]
    body = [
        [r.game, TASK_TYPE_LABELS.get(r.task_type, r.task_type), r.grammar, "yes" if r.won else "no"]
        + [str(n) for n in (r.steps, r.refused, r.not_admissible, r.nothing_happens)]
        for r in results
    ]
    return headers, body


def paper_table(rows: dict[str, dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """Headers and rows 'name | Pick | Clean | Heat | Cool | Look | Pick2 | All' in percent, as in
    ReAct (Table 3) and GiGPO (Table 1); a type without games shows '-'."""
    headers = ["planner", *TASK_TYPE_LABELS.values(), "All"]
    body = []
    for name, summary in rows.items():
        cells = [name]
        for task_type in TASK_TYPE_LABELS:
            entry = summary["per_type"][task_type]
            rate = entry["success_rate"]
            cells.append("-" if rate is None else f"{100 * rate:.1f} ({entry['won']}/{entry['games']})")
        cells.append(f"{100 * summary['success_rate']:.1f} ({summary['won']}/{summary['games']})")
        body.append(cells)
    return headers, body
