"""The CLI's one user-facing error type."""


class CliError(Exception):
    """A user-facing failure: printed as `error: <message>`, exit code 1."""
