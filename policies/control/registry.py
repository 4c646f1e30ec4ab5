"""Skill policy backends selected by exact name: the one place that knows every backend."""

from __future__ import annotations

from collections.abc import Callable

from policies.control.skill_policy import ExpertSkillPolicy, SkillPolicy, SkillPolicyConfig


def _onnx(config: SkillPolicyConfig) -> SkillPolicy:
    from policies.control.onnx_skill_policy import SHIPPED_MODEL_DIR, OnnxSkillPolicy  # onnxruntime: on use

    fallback = None if config.fallback == "none" else make_skill_policy(config.fallback)
    if isinstance(fallback, OnnxSkillPolicy):
        raise ValueError("the fallback of the onnx skill policy cannot be onnx itself")
    return OnnxSkillPolicy(config.model_dir or SHIPPED_MODEL_DIR, fallback, config.goal_horizon_m)


SKILL_POLICIES: dict[str, Callable[[SkillPolicyConfig], SkillPolicy]] = {
    "expert": lambda _config: ExpertSkillPolicy(),
    "onnx": _onnx,
}


def make_skill_policy(name: str, config: SkillPolicyConfig | None = None) -> SkillPolicy:
    """The backend called `name`; ValueError listing the known ones, PolicyFileError for a bad policy file."""
    if name not in SKILL_POLICIES:
        raise ValueError(f"unknown skill policy {name!r}; known: {', '.join(sorted(SKILL_POLICIES))}")
    return SKILL_POLICIES[name](config or SkillPolicyConfig())
