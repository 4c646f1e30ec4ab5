"""The one-block skill scene: the tabletop arm, the table as a plane and the episode's block, nothing else.

A skill episode touches one block, so the batched GPU backend simulates only that one: the three other blocks
and the visual-only plates go, and the table's box becomes the plane of its top face (plane-box contacts are
the cheapest). Issue 42 measured this scene at 2-4x the whole scene's throughput in MJX, with every block
still resting where it was put. Sizes, masses, joints, actuators and contact parameters are the tabletop's
own (`sim.tabletop.model`), so a policy trained here acts on the same arm.
"""

from __future__ import annotations

import mujoco

from sim.tabletop.model import BLOCKS, PLATES, TABLE_TOP_Z, build_mjcf

SKILL_BLOCK = "block"
"""The one block's body; its free joint is `block_joint`, its geom `block_geom`."""


def skill_scene_model(physics_dt: float = 0.002, solver_iterations: int | None = None) -> mujoco.MjModel:
    """Compile the one-block scene; `solver_iterations` caps Newton's iterations (None: the tabletop's)."""
    spec = mujoco.MjSpec.from_string(build_mjcf(physics_dt))
    for name in (*BLOCKS[1:], *PLATES):
        spec.delete(spec.body(name))
    spec.delete(spec.geom("floor"))
    block = spec.body(BLOCKS[0])
    block.name = SKILL_BLOCK
    block.joints[0].name = f"{SKILL_BLOCK}_joint"
    block.geoms[0].name = f"{SKILL_BLOCK}_geom"
    table = spec.geom("table")
    table.type = mujoco.mjtGeom.mjGEOM_PLANE
    table.pos = [table.pos[0], table.pos[1], TABLE_TOP_Z]
    if solver_iterations is not None:
        spec.option.iterations = solver_iterations
        spec.option.ls_iterations = solver_iterations
    return spec.compile()
