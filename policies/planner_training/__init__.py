"""Training the LLM planner: behaviour cloning with LoRA, RL from environment reward (GRPO, GiGPO, HGPO
advantages under a clipped token-level policy gradient with a KL penalty) and DPO from mined pairs.

`hgpo train-planner` (hgpo/train_planner.py) runs them; `runner.py` owns the loop and the run folder.
"""
