"""ALFWorld planning without ROS: the expert planner of the `alfworld` domain, games played in-process
through the project's closed loop, and per-type evaluation."""
