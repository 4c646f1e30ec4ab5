"""`hgpo launch`: runs the ROS 2 XML launch files of `launch/` where `ros2 launch` is not installable.

`parse` turns a launch file into resolved node commands, `runner` supervises them as processes, `cli` is the
command line. Only a subset of the XML format is supported (see DESIGN.md), so both launchers agree.
"""
