"""The ONNX skill-policy contract: what `hgpo export-onnx` writes and the controller's `onnx` backend reads.

A policy file has one input `obs` (batch, obs_dim), one input `goal` (batch, goal_dim), both float32, and
one output `action` (batch, 4) in [-1, 1]; observation and goal normalization are inside the graph. Its
`metadata_props` hold the keys below, all strings (layouts and skills as JSON). A change to the inputs,
outputs or meaning of a key bumps CONTRACT_VERSION, so an old file fails loudly instead of silently.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

from policies.skills.checkpoint import PolicyInfo

CONTRACT = "hgpo.skill_policy"
CONTRACT_VERSION = 1
INPUTS = ("obs", "goal")
OUTPUT = "action"

KEY_CONTRACT = "hgpo_contract"
KEY_VERSION = "hgpo_contract_version"
KEY_SKILLS = "skills"
KEY_OBS_LAYOUT = "obs_layout"
KEY_GOAL_LAYOUT = "goal_layout"
KEY_ACTION_SCALE = "action_scale"
KEY_CONTROL_PERIOD = "control_period_s"
KEY_RUN_ID = "training_run_id"
KEY_OBSERVATION_VERSION = "observation_version"


class PolicyFileError(ValueError):
    """A policy file that is missing, unreadable, of another contract or version, or that does not fit."""


def metadata_from_info(info: PolicyInfo) -> dict[str, str]:
    """The metadata_props of a policy file exported from a checkpoint with this PolicyInfo."""
    return {
        KEY_CONTRACT: CONTRACT,
        KEY_VERSION: str(CONTRACT_VERSION),
        KEY_SKILLS: json.dumps(list(info.skills)),
        KEY_OBS_LAYOUT: json.dumps([list(pair) for pair in info.obs_layout]),
        KEY_GOAL_LAYOUT: json.dumps([list(pair) for pair in info.goal_layout]),
        KEY_ACTION_SCALE: repr(info.action_scale),
        KEY_CONTROL_PERIOD: repr(info.control_period_s),
        KEY_RUN_ID: info.run_id,
        KEY_OBSERVATION_VERSION: str(info.observation_version),
    }


def info_from_metadata(metadata: Mapping[str, str], source: str) -> PolicyInfo:
    """Check a file's metadata against this contract and read its PolicyInfo; PolicyFileError says why not."""
    contract = metadata.get(KEY_CONTRACT)
    if contract != CONTRACT:
        raise PolicyFileError(
            f"{source} is not an HGPO skill policy ({KEY_CONTRACT} is {contract!r}, expected {CONTRACT!r}); "
            "export one with `hgpo export-onnx CHECKPOINT OUT.onnx`"
        )
    version = metadata.get(KEY_VERSION)
    if version != str(CONTRACT_VERSION):
        raise PolicyFileError(
            f"{source} follows skill-policy contract version {version}, this code reads version "
            f"{CONTRACT_VERSION}: re-export it from its checkpoint with this version of `hgpo export-onnx`"
        )
    missing = [
        key
        for key in (
            KEY_SKILLS,
            KEY_OBS_LAYOUT,
            KEY_GOAL_LAYOUT,
            KEY_ACTION_SCALE,
            KEY_CONTROL_PERIOD,
            KEY_OBSERVATION_VERSION,
        )
        if key not in metadata
    ]
    if missing:
        raise PolicyFileError(f"{source}: metadata lacks {', '.join(missing)}")
    try:
        info = PolicyInfo(
            skills=tuple(json.loads(metadata[KEY_SKILLS])),
            obs_layout=json.loads(metadata[KEY_OBS_LAYOUT]),
            goal_layout=json.loads(metadata[KEY_GOAL_LAYOUT]),
            action_scale=float(metadata[KEY_ACTION_SCALE]),
            control_period_s=float(metadata[KEY_CONTROL_PERIOD]),
            run_id=metadata.get(KEY_RUN_ID, ""),
            observation_version=int(metadata[KEY_OBSERVATION_VERSION]),
        )
    except (TypeError, ValueError) as err:  # json.JSONDecodeError is a ValueError
        raise PolicyFileError(f"{source}: malformed metadata: {err}") from err
    if not (math.isfinite(info.action_scale) and math.isfinite(info.control_period_s)):
        raise PolicyFileError(f"{source}: action_scale and control_period_s must be finite")
    return info
