"""The one error of the security package: a policy, keystore or document that cannot be used, and why."""


class SecurityError(Exception):
    """Says which file is wrong and what to do; the command line prints it without a traceback."""
