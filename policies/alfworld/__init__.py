"""ALFWorld planning without ROS: the `alfworld` planning domain and its prompt templates, the expert and
searcher planners, games played in-process through the project's closed loop, and per-type evaluation."""
