"""The exceptions of hdat, as the command line's exit codes:

- InputError (a ValueError): bad input, exit code 2 on the command line; the message names the key
  and what is allowed, word for word as `hdat` prints it; nothing was computed or written.
- NumericalError (a RuntimeError): a numerical failure, exit code 3; `.result` holds what was
  computed before it (None when the failure left nothing).
- Interrupted (a KeyboardInterrupt): Ctrl-C during a run, exit code 130; `.result` holds the
  finished part (None when nothing was finished).
"""


class InputError(ValueError):
    """Bad input: an unknown key, a wrong type, a value out of range, an inconsistent shape."""

    def __init__(self, message, key=""):
        super().__init__(message)
        self.key = key


class NumericalError(RuntimeError):
    """A numerical failure (non-finite or diverging state ...); `.result` is what was computed before it."""

    def __init__(self, message, result=None):
        super().__init__(message)
        self.result = result


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped a run; `.result` is what it had finished (the output folder keeps it)."""

    def __init__(self, message="interrupted", result=None):
        super().__init__(message)
        self.result = result


for _cls in (InputError, NumericalError, Interrupted):
    _cls.__module__ = "hdat"  # tracebacks say hdat.InputError, where users meet it
