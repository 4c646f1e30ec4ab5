"""The live view without rclpy: what the viewer node sends to the Foxglove app, built from plain values."""
