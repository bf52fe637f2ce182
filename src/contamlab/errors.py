"""The one exception type the entry points turn into a one-line message and a non-zero exit."""


class ContamlabError(Exception):
    """A user-facing error: bad config value, missing file, malformed input, unavailable model.

    The message names what is wrong (field, file, line) and what to do about it. Entry points print it on one
    line and exit with status 2 instead of showing a traceback.
    """


class NotImplementedYetError(ContamlabError):
    """A configured component whose implementation lands in a later issue; never a silent success."""
