"""The exceptions of hdat, as the command line's exit codes:

- InputError (a ValueError): bad input, exit code 2 on the command line; the message names the key
  and what is allowed, word for word as `hdat` prints it; nothing was computed or written.
- NumericalError (a RuntimeError): a numerical failure, exit code 3; `.result` holds what was
  computed before it (None when the failure left nothing).
- Interrupted (a KeyboardInterrupt): Ctrl-C during a run, exit code 130; `.result` holds the
  finished part (None when nothing was finished).
"""


import re

# The C++ core words its messages for the command line; a message that reaches Python says the same in
# Python's terms. Option keys -> the Python argument that plays their part:
PYTHON_KEYS = {
    "MODEL": "model", "DIR": "what", "--config": "params", "--grid": "grid", "--observable": "observables", "--mode": "mode",
    "--maps": "maps", "--model-file": "model_file", "--out": "out", "--threads": "threads", "--point-threads": "point_threads",
    "--retry-failed": "retry_failed", "--contour": "contours", "--x": "x", "--y": "y", "--heatmap": "heatmap", "--lines": "lines",
    "--together": "together", "--generic": "generic",
}
# ... and the command line's phrases -> Python's (applied in this order).
PYTHON_PHRASES = [
    ("(from --set)", "(from a keyword argument)"),
    ("(from --config)", "(from params)"),
    ("expected key=start:stop:count, key=start:stop:count:log or key=[a,b,...]",
     "expected {key: 'start:stop:count'}, {key: 'start:stop:count:log'} or {key: [a, b, ...]}"),
    ("(see `hdat list MODEL`)", "(see hdat.parameters(model))"),
    ("`hdat list MODEL`", "hdat.parameters(model)"),
    ("; --mode takes ", "; mode takes "),
    ("; give --observable (e.g. final:COLUMN)", "; give observables=['final:COLUMN']"),
]


def python_terms(message, key=""):
    """(message, key) of a C++ InputError in Python's terms: the same content, the Python names."""
    new_key = PYTHON_KEYS.get(key, key)
    if new_key != key and message.startswith(f"parameter '{key}': "):
        message = f"parameter '{new_key}': " + message[len(f"parameter '{key}': "):]
    for cli, python in PYTHON_PHRASES:
        message = message.replace(cli, python)
    # "--grid H=1:3: ..." -> "grid={'H': '1:3'}: ..." (a list stays a list).
    message = re.sub(r"--grid ([^\s=]+)=(\S*?)(?=: |;|$| )",
                     lambda m: f"grid={{{m.group(1)!r}: {m.group(2) if m.group(2).startswith('[') else repr(m.group(2))}}}", message)
    # Any other option of the command line named in the text: the keyword argument (--grid -> grid=).
    message = re.sub(r"(?<![\w-])--([a-z][a-z-]*)\b", lambda m: PYTHON_KEYS.get(m.group(0), m.group(1).replace("-", "_")) + "=", message)
    return message, new_key


class InputError(ValueError):
    """Bad input: an unknown key, a wrong type, a value out of range, an inconsistent shape."""

    def __init__(self, message, key=""):
        super().__init__(message)
        self.key = key

    @classmethod
    def _from_core(cls, message, key=""):
        """The C++ core's InputError (worded for the command line), in Python's terms."""
        return cls(*python_terms(message, key))


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
