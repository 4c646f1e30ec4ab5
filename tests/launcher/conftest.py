"""The `demo` fixture: a throwaway ament prefix on AMENT_PREFIX_PATH (see launcher_testing.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from launcher_testing import REPO, Demo


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Demo:
    """The demo prefix, put on AMENT_PREFIX_PATH for this test and the nodes it starts."""
    demo = Demo(tmp_path)
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(demo.prefix))
    monkeypatch.setenv("DEMO_DIR", str(demo.pids))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    return demo
