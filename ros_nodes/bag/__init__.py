"""ROS 2 recordings as MCAP files, without rclpy: what `ros2 bag record -s mcap` writes and `ros2 bag` reads.

`definitions` finds a message type's definition text (the .msg files with their dependencies concatenated),
`writer` writes cdr messages with those definitions embedded, `reader` reads a recording back, a truncated
one (a killed recorder) included. `encoder` serializes message objects to cdr without rclpy, and `episode`
records an in-process run on the graph's topics with them. The recorder node, `hgpo bag` and
`hgpo run-task|eval-planner --record` use them; nothing here needs a ROS graph or imports rclpy.
"""
