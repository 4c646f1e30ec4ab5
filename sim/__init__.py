"""Worlds without ROS: the MuJoCo tabletop scene, its tasks, skills and experts."""
