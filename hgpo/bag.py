"""`hgpo bag info|replay`: what a recording (MCAP, as `ros2 bag record -s mcap` writes it) holds,
and re-publishing it over DDS. `record:=true` on `hgpo launch` records a run; see docs/recording.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hgpo.cli import Commands, dispatch

COMMANDS: Commands = {
    "info": ("hgpo.bag:info_main", "topics, types, counts, rates and duration of a recording"),
    "replay": ("hgpo.bag:replay_main", "re-publish a recording over DDS at its recorded or a scaled rate"),
}


def main(argv: list[str]) -> int:
    return dispatch("hgpo bag", COMMANDS, argv)


def info_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="hgpo bag info",
        description="Read a recording once and print its topics with type, message count and rate, its "
        "duration and size, and whether it was closed (a recorder killed mid-run leaves a file that is read "
        "up to its last complete chunk).",
    )
    parser.add_argument("file", type=Path, help="a .mcap recording, e.g. runs/sim/<time>/recording.mcap")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the figures as JSON")
    options = parser.parse_args(argv)
    from ros_nodes.bag.info import bag_info
    from ros_nodes.bag.reader import BagError

    try:
        info = bag_info(options.file)
    except BagError as error:
        print(f"hgpo bag info: error: {error}", file=sys.stderr)
        return 2
    print(info.table())
    if options.json:
        options.json.write_text(json.dumps(info.as_json(), indent=2) + "\n")
    return 0


def replay_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="hgpo bag replay",
        description="Publish a recording's messages again over DDS, in the ROS_DOMAIN_ID of this shell, with "
        "their recorded types and QoS, at the recorded pace (--rate scales it), as `ros2 bag play` does.",
    )
    parser.add_argument("file", type=Path, help="a .mcap recording")
    parser.add_argument(
        "--rate", type=float, default=1.0, help="pace relative to the recording (2 = twice as fast)"
    )
    parser.add_argument("--topics", nargs="+", metavar="TOPIC", help="replay only these topics")
    parser.add_argument(
        "--delay",
        type=float,
        default=1.0,
        metavar="S",
        help="wait this long for discovery before the first message",
    )
    parser.add_argument(
        "--wait-for-subscribers",
        type=float,
        default=0.0,
        metavar="S",
        help="first wait up to S seconds until every replayed topic has a subscriber",
    )
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the replay's figures as JSON")
    options = parser.parse_args(argv)
    if not options.rate > 0:
        parser.error(f"--rate must be positive, got {options.rate}")
    from ros_nodes.bag.reader import BagError
    from ros_nodes.bag_replay import replay_main as run_replay

    try:
        report = run_replay(
            options.file, options.rate, options.topics, options.delay, options.wait_for_subscribers
        )
    except (BagError, ValueError) as error:
        print(f"hgpo bag replay: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    print(
        f"replayed {report.messages} messages on {report.topics} topics in {report.wall_s:.2f} s "
        f"(recorded span {report.recorded_s:.2f} s, rate {options.rate:g})"
    )
    if options.json:
        options.json.write_text(
            json.dumps({**vars(report), "rate": options.rate, "file": str(options.file)}) + "\n"
        )
    return 0
