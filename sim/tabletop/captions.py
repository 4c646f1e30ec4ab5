"""Text drawn onto video frames (Pillow), so a film of a task says what is happening: the instruction, the
current subgoal and how it ended."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw, ImageFont

WHITE, GREEN, RED = (255, 255, 255), (120, 230, 120), (255, 120, 110)
_BAND_ALPHA = 160  # the dark band behind the text: readable over any part of the scene


@dataclass(frozen=True)
class Caption:
    text: str
    colour: tuple[int, int, int] = WHITE


def font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    """Pillow's own font at `size` pixels (no font files needed); the bitmap one where FreeType is missing."""
    try:
        return ImageFont.load_default(size=size)
    except (ImportError, OSError):
        return ImageFont.load_default()


def draw_captions(frame: np.ndarray, captions: list[Caption], size: int = 14) -> np.ndarray:
    """`frame` (H, W, 3 uint8) with one line per caption on a dark band along its top edge."""
    if not captions:
        return frame
    image = Image.fromarray(frame)
    draw = ImageDraw.Draw(image, "RGBA")
    face = font(size)
    line = size + 4
    draw.rectangle((0, 0, image.width, 6 + line * len(captions)), fill=(0, 0, 0, _BAND_ALPHA))
    for i, caption in enumerate(captions):
        draw.text((6, 4 + line * i), caption.text, fill=caption.colour, font=face)
    return np.asarray(image)
