"""The one exception type that means "the user asked for something we cannot do".

The CLI turns a `TlabError` into one line on stderr and exit code 2; anything else is a bug
and keeps its traceback.
"""


class TlabError(Exception):
    """Bad input or an unsupported request, with a message fit to show the user as is."""
