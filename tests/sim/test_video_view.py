"""What a film of a task shows: a camera where left and right are the instruction's, and readable captions."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from sim.tabletop.captions import GREEN, Caption, draw_captions
from sim.tabletop.model import build_mjcf


def _image_x(model: mujoco.MjModel, data: mujoco.MjData, camera: str, body: str) -> float:
    """Horizontal image coordinate (-1 left .. 1 right, pinhole) of a body's centre seen from `camera`."""
    cam = model.camera(camera).id
    rotation = data.cam_xmat[cam].reshape(3, 3)  # columns: the camera's x (right), y (up), z (backwards)
    local = rotation.T @ (data.body(body).xpos - data.cam_xpos[cam])
    assert local[2] < 0, f"{body} is behind camera {camera}"
    return float(local[0] / -local[2])


@pytest.mark.parametrize(("camera", "left_on_the_left"), [("behind", True), ("front", False)])
def test_which_camera_shows_the_left_plate_on_the_left(camera: str, left_on_the_left: bool) -> None:
    model = mujoco.MjModel.from_xml_string(build_mjcf())
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    left, right = (_image_x(model, data, camera, plate) for plate in ("left_plate", "right_plate"))
    assert (left < right) == left_on_the_left


def test_captions_darken_a_band_and_leave_the_rest() -> None:
    frame = np.full((120, 200, 3), 200, np.uint8)
    out = draw_captions(frame, [Caption("put the red block on the left plate"), Caption("1. pick ok", GREEN)])
    assert out.shape == frame.shape and out.dtype == np.uint8
    band, below = out[:40], out[60:]
    assert band.mean() < 150 and (below == 200).all()
    assert (band == GREEN).all(axis=-1).any(), "the green line is drawn in green"
    assert draw_captions(frame, []) is frame
