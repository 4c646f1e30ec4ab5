"""The one error type of the launcher, so the command line can print it without a traceback."""


class LaunchError(Exception):
    """A launch file, argument or package the launcher cannot run; the message says where and what to do."""
