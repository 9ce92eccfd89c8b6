"""Python values and keyword arguments -> the command line's keys and values.

`params` plays the part of a --config file (nested or dotted keys), keyword arguments the part of
--set key=value (they win over params). Values go over as JSON: NumPy arrays and scalars become lists
and numbers, tuples lists, paths strings. A non-finite float is given as the text the command line
would see ("nan", "inf"), so the message about it is the command line's.
"""

import json
import math
import os
import shlex

import numpy as np


def to_value(value):
    """A parameter value in the form the C++ side reads (JSON types only)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        x = float(value)
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return x
    if isinstance(value, str) or value is None:
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, np.ndarray):
        return to_value(value.tolist())
    if isinstance(value, dict):
        return {str(k): to_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, range)):
        return [to_value(v) for v in value]
    if hasattr(value, "tolist"):  # pandas Series and other array-likes
        return to_value(value.tolist())
    return str(value)


def flatten(nested, declared, prefix=""):
    """Nested dicts -> dotted keys, stopping at declared keys (a key of kind `any` may hold a dict)."""
    out = []
    for key, value in nested.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict) and name not in declared:
            out.extend(flatten(value, declared, name))
        else:
            out.append((name, value))
    return out


def split(params, keys, declared):
    """(config, sets): params as a --config object, keys as --set pairs in the given order.

    A keyword argument whose value is a dict and which is not itself a key stands for its nested
    keys (prior={"kind": "discrete"} is prior.kind=discrete), as in a config file.
    """
    if params is not None and not isinstance(params, dict):
        from ._errors import InputError

        raise InputError(f"params must be a dict of key: value pairs (nested or dotted), got {type(params).__name__}", "params")
    config = to_value(params) if params else None
    sets = []
    for key, value in keys.items():
        value = to_value(value)
        if isinstance(value, dict) and key not in declared:
            sets.extend(flatten(value, declared, key))
        else:
            sets.append((key, value))
    return config, sets


def set_text(key, value):
    """key=value as the command line's --set takes it (strings bare, everything else as JSON)."""
    text = json.dumps(value, separators=(",", ":"))
    if isinstance(value, str):
        try:
            json.loads(value)  # a string that reads as JSON ("1", "true") must be quoted to stay a string
        except ValueError:
            text = value
    return f"{key}={text}"


def equivalent(words, config, sets, declared):
    """The command line that computes the same: `hdat WORDS --set k=v ...` (params first, as dotted keys)."""
    pairs = flatten(config, declared) if config else []
    pairs += sets
    parts = ["hdat", *words]
    for key, value in pairs:
        parts += ["--set", shlex.quote(set_text(key, value))]
    return " ".join(parts)


def call_text(function, positional, params, keys):
    """The Python call as written, for run.json's command_line."""
    args = [repr(to_value(a)) for a in positional]
    if params:
        args.append(f"params={to_value(params)!r}")
    args += [f"{k}={to_value(v)!r}" for k, v in keys.items()]
    return f"python: hdat.{function}({', '.join(args)})"
