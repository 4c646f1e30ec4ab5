"""Tabletop planning without ROS: the MuJoCo tabletop as a planning domain and its scripted expert planner."""
