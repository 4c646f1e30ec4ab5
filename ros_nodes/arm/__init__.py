"""The real-arm side without ROS: the arm's kinematics, the bridge's safety limits, the twist-to-command
conversion for MoveIt Servo and ros2_control, and the fake hardware's joint integrator.

Pure modules (numpy and MuJoCo only), so that `arm_bridge` and `fake_arm` stay thin and this logic is
unit-tested without DDS.
"""
