"""Goal-conditioned skills π(a | obs, goal): networks, checkpoints, trainers, ONNX export and runtime."""
