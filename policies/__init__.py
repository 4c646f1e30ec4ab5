"""Learning and decision making without ROS: skill policies, the controller's execution loop, planners."""
