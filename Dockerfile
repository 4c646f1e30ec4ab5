# HGPO on a full ROS 2 install, where `ros2 launch` runs the launch files that `hgpo launch` runs in the venv.
#   docker build -t hgpo .
#   docker run --rm hgpo                                     # the simulated stack: sim.launch.xml, task `stack`
#   docker run --rm hgpo ros2 launch hgpo real.launch.xml use_fake_hardware:=true
#   docker run --rm --net=host hgpo ros2 launch hgpo real.launch.xml   # beside a real arm's driver
#   under SROS2 (security:=true; this image's Fast DDS has DDS-Security): docs/security.md
FROM ros:kilted-ros-base

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# Python packages ROS 2 does not ship: requirements.txt's pins less the ROS wheels (ROS comes from apt
# here), torch from its CPU-only index. The image's Python is Ubuntu's, so pip needs --break-system-packages.
COPY requirements.txt /opt/hgpo/requirements.txt
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3-pip \
    && rm -rf /var/lib/apt/lists/* \
    && grep -v -E '^(ros-|catkin-pkg)' /opt/hgpo/requirements.txt > /tmp/requirements.txt \
    && pip3 install --no-cache-dir --break-system-packages --ignore-installed \
        --extra-index-url https://download.pytorch.org/whl/cpu -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt

# The workspace: hgpo_msgs (ament_cmake) and hgpo (ros_nodes/, an ament_cmake_python wrapper around the
# repository's Python packages), built by colcon after rosdep has installed what their package.xml name.
WORKDIR /opt/hgpo/ws
COPY . /opt/hgpo/src
RUN apt-get update \
    && rosdep update --rosdistro "${ROS_DISTRO}" \
    && rosdep install -y --ignore-src --from-paths /opt/hgpo/src/hgpo_ws/src /opt/hgpo/src/ros_nodes \
    && rm -rf /var/lib/apt/lists/* \
    && source "/opt/ros/${ROS_DISTRO}/setup.bash" \
    && colcon build --base-paths /opt/hgpo/src/hgpo_ws/src /opt/hgpo/src/ros_nodes \
    && rm -rf build log

# The official images' entrypoint sources ROS; source the workspace after it.
RUN sed -i '$i source "/opt/hgpo/ws/install/setup.bash" --' /ros_entrypoint.sh
CMD ["ros2", "launch", "hgpo", "sim.launch.xml"]
