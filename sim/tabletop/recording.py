"""A world that films itself: frames at a fixed simulated frame rate, streamed to a GIF or MP4 file, with
captions (what the caller sets in `captions`) drawn on each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import imageio.v2 as imageio
import numpy as np

from sim.tabletop.captions import Caption, draw_captions
from sim.tabletop.state import SceneState
from sim.tabletop.tasks import Task
from sim.tabletop.world import TabletopWorld, WorldConfig

VIDEO_SUFFIXES = (".gif", ".mp4")


class RecordingWorld(TabletopWorld):
    """`TabletopWorld` that appends a frame every 1/fps simulated seconds; `close()` finishes the file."""

    def __init__(
        self,
        path: Path,
        config: WorldConfig | None = None,
        fps: float = 25.0,
        size: tuple[int, int] = (480, 360),
        camera: str = "behind",
    ) -> None:
        if path.suffix not in VIDEO_SUFFIXES:
            raise ValueError(f"cannot write video {path}: use one of {', '.join(VIDEO_SUFFIXES)}")
        super().__init__(config)
        self._writer: Any = None
        self.path, self.fps, self.size, self.camera = path, fps, size, camera
        self.render(*size, camera=camera)  # fail now, with a clear message, if there is no OpenGL
        path.parent.mkdir(parents=True, exist_ok=True)
        extra: dict[str, Any] = {"loop": 0} if path.suffix == ".gif" else {"macro_block_size": 8}
        self._writer = imageio.get_writer(path, fps=fps, **extra)
        self._next_frame = 0.0
        self.frames = 0
        self.captions: list[Caption] = []

    def _capture(self, state: SceneState) -> None:
        if state.time + 1e-9 >= self._next_frame:
            frame: np.ndarray = self.render(*self.size, camera=self.camera)
            self._writer.append_data(draw_captions(frame, self.captions))
            self.frames += 1
            self._next_frame += 1.0 / self.fps  # on a fixed schedule, so the video plays at real speed

    def reset(self, task: Task) -> SceneState:
        state = super().reset(task)
        self._next_frame = state.time
        self._capture(state)
        return state

    def step(self, ee_velocity: np.ndarray, gripper_width: float) -> SceneState:
        state = super().step(ee_velocity, gripper_width)
        self._capture(state)
        return state

    def linger(self, seconds: float) -> None:
        """Film the scene as it is for `seconds` more (the last captions, e.g. the outcome, stay readable)."""
        frame = draw_captions(self.render(*self.size, camera=self.camera), self.captions)
        for _ in range(round(seconds * self.fps)):
            self._writer.append_data(frame)
            self.frames += 1

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        super().close()
