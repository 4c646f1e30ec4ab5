"""The live view's entities: the arm posed by the simulator's own model, the scene's bodies, the target."""

from __future__ import annotations

import numpy as np

from ros_nodes.view.arm import ArmGeometry
from ros_nodes.view.scene import Body, scene_update, timestamp
from sim.tabletop import TabletopWorld, make_task
from sim.tabletop.model import ARM_JOINTS, FINGER_JOINTS


def test_arm_links_sit_where_the_simulator_has_them() -> None:
    world = TabletopWorld()
    world.reset(make_task("stack", 2))
    for _ in range(50):  # somewhere away from home
        world.step(np.array([0.1, -0.05, 0.05]), 0.02)
    names = ARM_JOINTS + FINGER_JOINTS
    positions = {name: float(world.data.qpos[world.model.joint(name).qposadr[0]]) for name in names}
    arm = ArmGeometry()
    entity = arm.entity(positions, timestamp(0))
    assert np.allclose(arm.geom_positions(), world.data.geom_xpos[arm.geoms], atol=1e-9)
    assert len(arm.geoms) >= 10  # links, hand and fingers
    assert b"arm" in entity.encode()


def test_scene_update_holds_every_body_the_gripper_and_the_target() -> None:
    bodies = [
        Body("red_block", "block", (0.5, 0.0, 0.02), (0.0, 0.0, 0.0, 1.0), (0.04, 0.04, 0.04)),
        Body("left_plate", "plate", (0.5, 0.25, 0.002), (0.0, 0.0, 0.0, 1.0), (0.1, 0.24, 0.004)),
    ]
    update = scene_update(
        timestamp(1_500_000_000), bodies, (0.4, 0.0, 0.3), 0.05, (0.5, 0.0, 0.05), "pick(red_block)"
    )
    data = update.encode()
    for name in (b"red_block", b"left_plate", b"gripper", b"target", b"pick(red_block)"):
        assert name in data, name
    assert b"target" not in scene_update(timestamp(0), bodies, (0.4, 0.0, 0.3), 0.05, None).encode()
