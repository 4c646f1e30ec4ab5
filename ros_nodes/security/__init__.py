"""SROS2 keystores for the real graph without the `sros2` package (not on PyPI): a CA, one enclave per node,
governance and per-enclave permissions in DDS-Security's XML, signed as S/MIME by the permissions CA, laid out
as `ros2 security` lays them out. No rclpy here: the files are made and checked the same with or without ROS.
"""
