"""ALFWorld planning without ROS: planner backends for text households, prompt rendering, the closed
plan–execute loop shared by in-process episodes and the planner node, and per-type evaluation."""
