"""ROS 2 recordings as MCAP files, without rclpy: what `ros2 bag record -s mcap` writes and `ros2 bag` reads.

`definitions` finds a message type's definition text (the .msg files with their dependencies concatenated),
`writer` writes cdr messages with those definitions embedded, `reader` reads a recording back, a truncated
one (a killed recorder) included. The recorder node and `hgpo bag` use them; nothing here needs a ROS graph.
"""
