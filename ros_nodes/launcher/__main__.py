"""`python -m ros_nodes.launcher ...` is `hgpo launch ...` without the dispatcher (used by tests)."""

import sys

from ros_nodes.launcher.cli import main

sys.exit(main(sys.argv[1:]))
