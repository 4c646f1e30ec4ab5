"""The tabletop scene's MJCF, generated here so that every size and name has one source.

A Panda-like 7-DoF arm (Franka kinematics, capsule geoms, gravity-compensated links, joint position
servos) with a parallel gripper, a table whose top is the plane z = 0, four free cubes and two
visual-only plates that blocks can be pushed onto.
"""

from __future__ import annotations

import mujoco

TABLE_TOP_Z = 0.0
BLOCK_SIZE = 0.04
BLOCK_MASS = 0.05
BLOCK_COLOURS: dict[str, tuple[float, float, float]] = {
    "red_block": (0.85, 0.15, 0.15),
    "green_block": (0.15, 0.7, 0.2),
    "blue_block": (0.15, 0.3, 0.85),
    "yellow_block": (0.95, 0.8, 0.1),
}
BLOCKS: tuple[str, ...] = tuple(BLOCK_COLOURS)
PLATE_SIZE = (0.10, 0.24, 0.004)
"""Full extents of a plate; its slots lie along y, across the fingers' opening direction (x)."""
PLATES: tuple[str, ...] = ("left_plate", "right_plate")
PLATE_COLOURS = {"left_plate": (0.55, 0.55, 0.6), "right_plate": (0.45, 0.35, 0.3)}

ARM_JOINTS: tuple[str, ...] = tuple(f"joint{i}" for i in range(1, 8))
FINGER_JOINTS: tuple[str, ...] = ("finger_joint1", "finger_joint2")
HOME_QPOS: tuple[float, ...] = (0.0, 0.0, 0.0, -1.5708, 0.0, 1.5708, -0.7853)
"""Home posture: gripper pointing down, the fingers opening along world x."""
EE_SITE = "grip"
MAX_GRIPPER_WIDTH = 0.08

# Panda body chain: name, pos and quat in the parent frame, joint range, servo kp and kv, torque limit,
# mass, offset of the next body (drawn as a capsule).
_ARM_LINKS = (
    ("link1", "0 0 0.333", "1 0 0 0", (-2.8973, 2.8973), 4500, 150, 87, 4.0, None),
    ("link2", "0 0 0", "1 -1 0 0", (-1.7628, 1.7628), 4500, 150, 87, 0.65, "0 -0.316 0"),
    ("link3", "0 -0.316 0", "1 1 0 0", (-2.8973, 2.8973), 3500, 100, 87, 3.2, "0.0825 0 0"),
    ("link4", "0.0825 0 0", "1 1 0 0", (-3.0718, -0.0698), 3500, 100, 87, 3.6, "-0.0825 0.384 0"),
    ("link5", "-0.0825 0.384 0", "1 -1 0 0", (-2.8973, 2.8973), 2000, 40, 12, 1.2, None),
    ("link6", "0 0 0", "1 1 0 0", (-0.0175, 3.7525), 2000, 40, 12, 1.7, "0.088 0 0"),
    ("link7", "0.088 0 0", "1 1 0 0", (-2.8973, 2.8973), 2000, 40, 12, 0.7, "0 0 0.107"),
)


def _link(index: int) -> tuple[str, str]:
    """Open one arm body (recursively nested) and return (opening xml, matching actuator xml)."""
    name, pos, quat, (lo, hi), kp, kv, tau, mass, child = _ARM_LINKS[index]
    segment = f'<geom type="capsule" fromto="0 0 0 {child}" size="0.045" mass="0.01"/>' if child else ""
    body = (
        f'<body name="{name}" pos="{pos}" quat="{quat}" gravcomp="1">'
        f'<joint name="joint{index + 1}" range="{lo} {hi}"/>'
        f'<geom type="cylinder" size="0.055 0.055" mass="{mass}"/>{segment}'
    )
    actuator = (
        f'<position name="actuator{index + 1}" joint="joint{index + 1}" kp="{kp}" kv="{kv}" '
        f'ctrlrange="{lo} {hi}" forcerange="-{tau} {tau}"/>'
    )
    return body, actuator


def _finger(name: str, joint: str, quat: str) -> str:
    # The pad's inner face is the plane y = q, so the gripper width is the sum of the finger joints.
    return (
        f'<body name="{name}" pos="0 0 0.0584" quat="{quat}" gravcomp="1">'
        f'<joint name="{joint}" class="finger"/>'
        '<geom class="finger" pos="0 0.01 0.015" size="0.01 0.008 0.015"/>'
        '<geom class="pad" pos="0 0.006 0.045" size="0.01 0.006 0.015"/>'
        "</body>"
    )


def _hand() -> str:
    return (
        '<body name="hand" pos="0 0 0.107" quat="0.9238795 0 0 -0.3826834" gravcomp="1">'
        '<geom class="collision" type="box" pos="0 0 0.03" size="0.025 0.095 0.025" mass="0.7" '
        'rgba="0.95 0.95 0.95 1"/>'
        f'<site name="{EE_SITE}" pos="0 0 0.1034" size="0.005" rgba="1 0 1 0.6"/>'
        + _finger("left_finger", FINGER_JOINTS[0], "1 0 0 0")
        + _finger("right_finger", FINGER_JOINTS[1], "0 0 0 1")
        + "</body>"
    )


def _blocks() -> str:
    half = BLOCK_SIZE / 2
    return "".join(
        f'<body name="{name}" pos="0.5 {0.1 * i} {TABLE_TOP_Z + half}">'
        f'<freejoint name="{name}_joint"/>'
        f'<geom class="block" size="{half} {half} {half}" rgba="{r} {g} {b} 1"/>'
        "</body>"
        for i, (name, (r, g, b)) in enumerate(BLOCK_COLOURS.items())
    )


def _plates() -> str:
    sx, sy, sz = (s / 2 for s in PLATE_SIZE)
    # Mocap bodies: the task initialiser moves them; contype 0 keeps them out of the physics.
    return "".join(
        f'<body name="{name}" mocap="true" pos="0.5 {0.25 * (1 - 2 * i)} {TABLE_TOP_Z + sz}">'
        f'<geom type="box" size="{sx} {sy} {sz}" contype="0" conaffinity="0" rgba="{r} {g} {b} 1"/>'
        "</body>"
        for i, (name, (r, g, b)) in enumerate(PLATE_COLOURS.items())
    )


def build_mjcf(physics_dt: float = 0.002) -> str:
    """Return the scene's MJCF text."""
    bodies, actuators = zip(*(_link(i) for i in range(len(_ARM_LINKS))), strict=True)
    arm = "".join(bodies) + _hand() + "</body>" * len(bodies)
    lo, hi = 0.0, MAX_GRIPPER_WIDTH / 2
    return f"""
<mujoco model="hgpo_tabletop">
  <compiler angle="radian" autolimits="true"/>
  <option timestep="{physics_dt}" integrator="implicitfast" cone="elliptic" impratio="10"/>
  <visual>
    <global offwidth="1280" offheight="960"/><quality shadowsize="2048"/>
    <headlight ambient="0.3 0.3 0.3" diffuse="0.3 0.3 0.3" specular="0 0 0"/>
  </visual>
  <default>
    <joint axis="0 0 1" damping="1" armature="0.1"/>
    <geom type="capsule" contype="0" conaffinity="0" group="1" rgba="0.92 0.92 0.92 1"/>
    <default class="collision"><geom contype="1" conaffinity="1" group="2" condim="4"/></default>
    <default class="finger">
      <joint type="slide" axis="0 1 0" range="{lo} {hi}" damping="2" armature="0.01"/>
      <geom type="box" contype="1" conaffinity="1" mass="0.015" condim="4" rgba="0.25 0.25 0.25 1"/>
      <default class="pad">
        <geom friction="2 0.02 0.0001" condim="6" solref="0.005 1" solimp="0.95 0.99 0.001"/>
      </default>
    </default>
    <default class="block">
      <geom type="box" contype="1" conaffinity="1" mass="{BLOCK_MASS}" friction="0.8 0.01 0.0001" condim="4"
            solref="0.005 1"/>
    </default>
  </default>
  <asset>
    <texture name="grid" type="2d" builtin="checker" rgb1="0.3 0.32 0.35" rgb2="0.25 0.27 0.3"
             width="256" height="256"/>
    <material name="grid" texture="grid" texrepeat="8 8"/>
  </asset>
  <worldbody>
    <light pos="0.5 0 2" dir="0 0 -1" directional="true" diffuse="0.5 0.5 0.5" specular="0.1 0.1 0.1"/>
    <!-- "front" faces the robot, so the robot's left (+y, left_plate) is on the image's right. "behind"
         looks over the robot's right shoulder: left and right on the image are the robot's, the
         instruction's ("the left plate" is on the image's left); videos use it. -->
    <camera name="front" pos="1.6 0 1.0" xyaxes="0 1 0 -0.8 0 1.05" fovy="50"/>
    <camera name="behind" pos="-0.5 -0.5 1.4" xyaxes="0.447 -0.894 0 0.699 0.349 0.624" fovy="50"/>
    <camera name="top" pos="0.45 0 1.7" xyaxes="0 1 0 -1 0 0"/>
    <geom name="floor" type="plane" size="3 3 0.1" pos="0 0 -0.75" material="grid"/>
    <geom name="table" class="collision" type="box" pos="0.4 0 {TABLE_TOP_Z - 0.02}" size="0.6 0.7 0.02"
          friction="0.6 0.005 0.0001" rgba="0.62 0.5 0.38 1"/>
    <body name="link0">
      <geom type="cylinder" fromto="0 0 0 0 0 0.2" size="0.07"/>
      <geom fromto="0 0 0.2 0 0 0.28" size="0.06"/>
      {arm}
    </body>
    {_blocks()}
    {_plates()}
  </worldbody>
  <contact><exclude body1="left_finger" body2="right_finger"/></contact>
  <tendon>
    <fixed name="gripper_width">
      <joint joint="{FINGER_JOINTS[0]}" coef="1"/><joint joint="{FINGER_JOINTS[1]}" coef="1"/>
    </fixed>
  </tendon>
  <equality>
    <joint joint1="{FINGER_JOINTS[0]}" joint2="{FINGER_JOINTS[1]}" solref="0.005 1" solimp="0.95 0.99 0.001"/>
  </equality>
  <actuator>
    {"".join(actuators)}
    <position name="gripper" tendon="gripper_width" kp="400" kv="20" ctrlrange="0 {MAX_GRIPPER_WIDTH}"
              forcerange="-15 15"/>
  </actuator>
</mujoco>
"""


def load_model(physics_dt: float = 0.002) -> mujoco.MjModel:
    """Compile the scene."""
    return mujoco.MjModel.from_xml_string(build_mjcf(physics_dt))
