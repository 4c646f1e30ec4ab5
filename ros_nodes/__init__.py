"""Thin ROS 2 nodes that translate messages to and from `sim` and `policies` objects, and the launcher."""
