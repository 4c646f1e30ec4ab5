"""HGPO: a hierarchical embodied agent stack (planner, goal-conditioned skills, ROS 2 bridges)."""
