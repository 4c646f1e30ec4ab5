"""One ONNX skill-policy file run by onnxruntime, checked against the contract before the first action.

Deployment reads everything it needs from the file (see `onnx_contract`); this class refuses, with a
PolicyFileError saying what is wrong and what to do, a file that is missing, not ONNX, of another contract
or version, or whose inputs and outputs do not match the layouts its metadata declares.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnxruntime as ort

from policies.skills.checkpoint import PolicyInfo, layout_dim
from policies.skills.onnx_contract import INPUTS, OUTPUT, PolicyFileError, info_from_metadata

ACTION_DIM = 4


class OnnxPolicy:
    """π(a | obs, goal) from a policy file, on one onnxruntime CPU thread (a control loop's budget)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise PolicyFileError(
                f"policy file {self.path} does not exist: train and export one (hgpo train-skills, "
                "hgpo export-onnx) or point the controller's model_dir at a folder of them"
            )
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        try:
            self.session = ort.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])
        except Exception as err:  # onnxruntime raises its own pybind types (InvalidProtobuf, Fail, ...)
            raise PolicyFileError(f"{self.path} is not a readable ONNX model: {err}") from err
        self.info: PolicyInfo = info_from_metadata(
            self.session.get_modelmeta().custom_metadata_map, str(self.path)
        )
        self._check_signature()
        self._prove()

    def _prove(self) -> None:
        """One inference on zeros of the contract's shapes and dtypes, so that a file whose graph cannot run
        them (float64 or rank-3 inputs, a broken op) fails here, at start-up, never mid-task."""
        obs = np.zeros(layout_dim(self.info.obs_layout), np.float32)
        goal = np.zeros(layout_dim(self.info.goal_layout), np.float32)
        try:
            action = self.act(obs, goal)
        except Exception as err:  # onnxruntime's pybind errors (InvalidArgument, Fail, ...)
            raise PolicyFileError(
                f"{self.path} fails a test inference on the contract's inputs: {err}"
            ) from err
        if np.shape(action) != (ACTION_DIM,) or not np.all(np.isfinite(action)):
            raise PolicyFileError(
                f"{self.path}: a test inference gave {np.asarray(action).tolist()}, "
                f"not {ACTION_DIM} finite values"
            )

    def _check_signature(self) -> None:
        inputs = {i.name: i.shape for i in self.session.get_inputs()}
        outputs = {o.name: o.shape for o in self.session.get_outputs()}
        expected = {
            INPUTS[0]: layout_dim(self.info.obs_layout),
            INPUTS[1]: layout_dim(self.info.goal_layout),
        }
        if set(inputs) != set(INPUTS) or set(outputs) != {OUTPUT}:
            raise PolicyFileError(
                f"{self.path} has inputs {sorted(inputs)} and outputs {sorted(outputs)}; the contract is "
                f"inputs {list(INPUTS)}, output [{OUTPUT!r}]"
            )
        for name, dim in expected.items():
            if inputs[name][-1] != dim:
                raise PolicyFileError(
                    f"{self.path}: input {name!r} has width {inputs[name][-1]}, its metadata layout {dim}"
                )
        if outputs[OUTPUT][-1] != ACTION_DIM:
            raise PolicyFileError(f"{self.path}: output {OUTPUT!r} has width {outputs[OUTPUT][-1]}, not 4")

    def act_batch(self, obs: np.ndarray, goal: np.ndarray) -> np.ndarray:
        """Actions (batch, 4) in [-1, 1] for observations (batch, obs_dim) and goals (batch, goal_dim)."""
        feed = {INPUTS[0]: np.asarray(obs, np.float32), INPUTS[1]: np.asarray(goal, np.float32)}
        return self.session.run([OUTPUT], feed)[0]

    def act(self, obs: np.ndarray, goal: np.ndarray) -> np.ndarray:
        """One action (4,) for one observation and goal."""
        return self.act_batch(np.asarray(obs)[None], np.asarray(goal)[None])[0]
