"""hdat.Model: your own dynamics model, declared in Python with NumPy, run by hdat's C++ harness.

A subclass states the physics and nothing else (docs/python.md, "Your own model"):

    class TeacherStudent(hdat.Model):
        name = "py-teacher-student"
        summary = "linear teacher-student, online SGD"
        parameters = {"eta": hdat.Real(0.5, "learning rate", range=(0, 2), open="both"),
                      "N": hdat.Integer(1000, "input dimension", range=(2, None)), ...}
        standard = dict(t_max=10, seeds=8, dims=[250, 500, 1000], size_key="N", drift_times=[0, 2])
        terms = ("eta", "eta2")                              # the drift's terms, in order

        def blocks(self, config): return {"R": (K, K), "Q": (K, K, "symmetric")}
        def drift(self, config, blocks, t): return {"eta": {"R": ..., "Q": ...}, "eta2": {"Q": ...}}
        def observe(self, config, blocks, t): return {"eps": ...}            # or {"eps": (value, se)}
        def initial_state(self, config): return {"R": ..., "Q": ...}

        class System:                                        # one finite run (one seed)
            def __init__(self, config, size, replica): ...
            def time(self): ...                              # the theory's time of the weights
            def advance_to(self, t): ...                     # train until time() reaches t
            def state(self): ...                             # {block: array}, measured
            def observe(self): ...                           # {name: value or (value, se)}
            def increment(self): ...                         # one step's {term: {block: array}} / dt, not applied

    hdat.curve(TeacherStudent, eta=0.8); hdat.validate(TeacherStudent, mode="drift")

The class is registered once under its name (in this process) and every command runs the same C++ as a
built-in model: the keys are checked before any work, the tables, verdict, run.json, persisted seeds
(resume) and figures are the same.
"""

import keyword
import re

import numpy as np

from . import _core
from ._errors import InputError

# ---------------------------------------------------------------------------------------------------
# Parameters: each key with its default, range and meaning (hdat::ParamSet).


class Parameter:
    """A key of the model: default (None: optional, unset unless given), meaning, allowed range.

    range  (low, high), either None for unbounded; open: "" (closed), "low", "high" or "both"
    """

    kind = None

    def __init__(self, default, doc, range=None, open=""):
        if not isinstance(doc, str) or not doc:
            raise TypeError("a parameter needs its meaning: a non-empty doc string")
        if open not in ("", "low", "high", "both"):
            raise ValueError(f"open must be '', 'low', 'high' or 'both', got {open!r}")
        low, high = (None, None) if range is None else range
        self.default, self.doc = default, doc
        self.low = None if low is None else float(low)
        self.high = None if high is None else float(high)
        self.low_open, self.high_open = open in ("low", "both"), open in ("high", "both")
        self.choices = []

    def _spec(self, key):
        from ._keys import to_value

        return dict(key=key, kind=self.kind, default=to_value(self.default), doc=self.doc, lo=self.low, hi=self.high,
                    lo_open=self.low_open, hi_open=self.high_open, choices=list(self.choices))


class Real(Parameter):
    """A real number."""
    kind = "real"


class Integer(Parameter):
    """An integer."""
    kind = "integer"


class RealList(Parameter):
    """A list of reals (a 1-d NumPy array in config); the range applies to every element."""
    kind = "real_list"


class IntegerList(Parameter):
    """A list of integers."""
    kind = "int_list"


class RealMatrix(Parameter):
    """A matrix given as a list of rows (a 2-d NumPy array in config); the range applies to every element."""
    kind = "real_matrix"


class Boolean(Parameter):
    """True or False."""
    kind = "boolean"

    def __init__(self, default, doc):
        super().__init__(default, doc)


class Text(Parameter):
    """A string."""
    kind = "text"

    def __init__(self, default, doc):
        super().__init__(default, doc)


class Choice(Parameter):
    """One of the given strings."""
    kind = "choice"

    def __init__(self, default, choices, doc):
        super().__init__(default, doc)
        self.choices = [str(c) for c in choices]
        if default not in self.choices:
            raise ValueError(f"the default {default!r} is not one of the choices {self.choices}")


# ---------------------------------------------------------------------------------------------------
# The model.


class Config:
    """The resolved keys of one command, by name (config.eta or config["eta"]): reals as float,
    integers as int, lists and matrices as NumPy arrays, unset optional keys None; built once per
    command, and Model.configure may add what it derives from them (config.K = ...)."""

    def __init__(self, values):
        self.__dict__.update(values)

    def __getitem__(self, key):
        return self.__dict__[key]

    def __contains__(self, key):
        return key in self.__dict__

    def __repr__(self):
        return "Config(" + ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items()) + ")"


class Model:
    """Base class of a dynamics model declared in Python (see the module's doc and docs/python.md).

    Class attributes: name, summary, description, parameters {key: Parameter}, standard (the model's
    defaults of the shared keys: t_max, n_points, seeds, dims, size_key, drift_times, drift_samples,
    false_alarm, detectable, rel_tolerance, rtol, atol, max_size), terms (the drift's named terms),
    start_keys (keys that give the initial state: curve then starts from initial_state), theory_only_keys
    (keys that change no simulation: left out of the hash naming persisted seeds), escape_event (the
    event of events() that ends a plateau: each seed's escape time, and validate's comparison window),
    and System.
    """

    name = None
    summary = ""
    description = ""
    parameters = {}
    standard = {}
    terms = ("drift",)
    start_keys = ()
    theory_only_keys = ()
    escape_event = None
    System = None

    def configure(self, config):
        """Derive what the command needs from the keys, once (config.K = ...); raise
        hdat.InputError(message, key) for keys that do not fit together. Default: nothing."""

    def blocks(self, config):
        """The state's named blocks: {name: (n,) | (rows, cols) | (rows, cols, "symmetric")}."""
        raise NotImplementedError

    def drift(self, config, blocks, t):
        """The theory's d(blocks)/dt in its named terms: {term: {block: array}} (a block a term does not
        change may be left out). The drift check evaluates it at t = 0."""
        raise NotImplementedError

    def observe(self, config, blocks, t):
        """The observables at the state: {name: value} or {name: (value, se)}."""
        raise NotImplementedError

    def initial_state(self, config):
        """The theory's own initial state {block: array} (given overlaps, or one draw at size N)."""
        raise NotImplementedError

    def replica_initial_state(self, config, replica):
        """Replica `replica`'s initial state (cheap: from its initial weights only); curve then starts
        from the seeds' mean of these, as simulate's mean does. None (not overridden): initial_state."""
        return None

    def describe(self, config):
        """One line describing the configuration, for summaries."""
        return ""

    def events(self, config):
        """Functions of the state whose zero crossings are the model's events: {name: g} or
        {name: (g, direction)}, g(blocks, t) -> float, direction +1 (upward crossings only), -1
        (downward) or 0 (both). The theory's crossings are located between the integrator's steps
        (curve reports them in run.json `events` and its summary); a finite run's between its
        observations. Default: none."""
        return {}


_STANDARD = ("t_max", "n_points", "seeds", "dims", "false_alarm", "detectable", "rel_tolerance", "drift_samples", "drift_times", "rtol",
             "atol", "size_key", "max_size")
# Keys the harness declares for every dynamics model (declare_standard_keys, declare_break_term).
_HARNESS_KEYS = ("t_max", "t_points", "n_points", "rtol", "atol", "stepper", "seed", "start", "seeds", "dims", "mode", "false_alarm",
                 "detectable", "tolerance", "rel_tolerance", "t_compare", "theory_replicas", "drift_samples", "drift_times", "break_term")

_registered = {}  # name -> (class, {key: kind})


def _bad(message):
    return InputError(f"parameter 'model': {message}", "model")


def _overrides(cls, method):
    return getattr(cls, method) is not getattr(Model, method)


def _check_declaration(cls):
    name = cls.name
    if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9_-]*", name):
        raise _bad(f"{cls.__name__}.name must be a lower-case name (letters, digits, - and _), got {name!r}")
    if not isinstance(cls.parameters, dict) or any(not isinstance(p, Parameter) for p in cls.parameters.values()):
        raise _bad(f"{cls.__name__}.parameters must be {{key: hdat.Real(...) | hdat.Integer(...) | ...}}")
    for key in cls.parameters:
        if not isinstance(key, str) or not key.isidentifier() or keyword.iskeyword(key):
            raise _bad(f"{cls.__name__}.parameters: key {key!r} is not a Python identifier")
        if key in _HARNESS_KEYS:
            raise _bad(f"{cls.__name__}.parameters: '{key}' is one of the harness's keys; give its default in `standard`")
    unknown = [k for k in cls.standard if k not in _STANDARD]
    if unknown:
        raise _bad(f"{cls.__name__}.standard: unknown {', '.join(map(repr, unknown))} (allowed: {', '.join(_STANDARD)})")
    size_key = cls.standard.get("size_key", "D")
    if not isinstance(cls.parameters.get(size_key), Integer):
        raise _bad(f"{cls.__name__}: the size key '{size_key}' (standard['size_key']) must be one of its parameters, an hdat.Integer")
    terms = list(cls.terms)
    if not terms or len(set(terms)) != len(terms) or any(not isinstance(t, str) or not t or t == "none" for t in terms):
        raise _bad(f"{cls.__name__}.terms must be distinct non-empty names (not 'none'), got {cls.terms!r}")
    for key in list(cls.start_keys) + list(cls.theory_only_keys):
        if key not in cls.parameters:
            raise _bad(f"{cls.__name__}: start_keys and theory_only_keys name its parameters; '{key}' is none")
    if cls.escape_event is not None and (not isinstance(cls.escape_event, str) or not _overrides(cls, "events")):
        raise _bad(f"{cls.__name__}.escape_event names one of its events(): a string, with events() defined")
    for method in ("blocks", "drift", "observe", "initial_state"):
        if not _overrides(cls, method):
            raise _bad(f"{cls.__name__} must define {method}()")
    if cls.System is None or not isinstance(cls.System, type):
        raise _bad(f"{cls.__name__}.System must be a class (the finite system: one run per seed)")
    for method in ("time", "advance_to", "state", "observe", "increment"):
        if not callable(getattr(cls.System, method, None)):
            raise _bad(f"{cls.__name__}.System must define {method}()")


def register(model):
    """Register a Model subclass (or an instance of one) under its name, once; returns the name. Done
    by hdat.curve, simulate, validate, run, sweep and parameters when given the class."""
    cls = model if isinstance(model, type) else type(model)
    if not (isinstance(cls, type) and issubclass(cls, Model)) or cls is Model:
        raise _bad(f"expected a model name or a subclass of hdat.Model, got {model!r}")
    known = _registered.get(cls.name)
    if known is not None:
        if known[0] is not cls:
            raise _bad(f"the name '{cls.name}' is registered already by another class ({known[0].__module__}.{known[0].__qualname__}); "
                       "a model's name names its output folders and persisted seeds: give this one another name")
        return cls.name
    _check_declaration(cls)
    instance = model if not isinstance(model, type) else cls()
    spec = dict(name=cls.name, summary=cls.summary or cls.name, description=cls.description or (cls.__doc__ or "").strip(),
                parameters=[p._spec(k) for k, p in cls.parameters.items()], standard=_standard_spec(cls.standard),
                terms=list(cls.terms), start_keys=list(cls.start_keys), theory_only_keys=list(cls.theory_only_keys),
                replica_start=_overrides(cls, "replica_initial_state"), has_record=callable(getattr(cls.System, "record", None)),
                has_events=_overrides(cls, "events"), escape_event=cls.escape_event or "")
    kinds = _core.register_model(spec, instance, lambda m, flat: _bind(m, kinds, flat), _layout)
    _registered[cls.name] = (cls, kinds)
    return cls.name


def _standard_spec(standard):
    from ._keys import to_value

    return {k: to_value(v) for k, v in standard.items()}


def model_name(model):
    """A model given by name, or a Model class to register."""
    return model if isinstance(model, str) else register(model)


# ---------------------------------------------------------------------------------------------------
# What the C++ side calls once per command (python/own_model.cpp).


def _typed(kind, value):
    if value is None:
        return None
    if kind == "real":
        return float(value)
    if kind == "integer":
        return int(value)
    if kind in ("real_list", "real_matrix"):
        return np.array(value, dtype=float)
    if kind == "int_list":
        return [int(v) for v in value]
    return value


def _bind(model, kinds, flat):
    """The config of one command: the keys typed, then the model's configure()."""
    config = Config({k: _typed(kinds.get(k), v) for k, v in flat.items()})
    model.configure(config)
    return config


def _layout(model, config):
    """The model's blocks as (name, rows, cols, symmetric, vector) for hdat::StateLayout."""
    blocks = model.blocks(config)
    if not isinstance(blocks, dict) or not blocks:
        raise TypeError(f"model '{model.name}': blocks() must return {{name: shape}} with at least one block")
    out = []
    for name, shape in blocks.items():
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        symmetric = len(shape) == 3 and shape[2] == "symmetric"
        dims = shape[:2] if symmetric else shape
        if not (1 <= len(dims) <= 2) or any(isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1 for d in dims):
            raise ValueError(f"model '{model.name}': block {name!r}: the shape must be (n,), (rows, cols) or (rows, cols, 'symmetric'), "
                             f"got {shape!r}")
        if symmetric and dims[0] != dims[1]:
            raise ValueError(f"model '{model.name}': block {name!r} is symmetric, so square; got {dims!r}")
        vector = len(dims) == 1
        out.append((str(name), int(dims[0]), 1 if vector else int(dims[1]), symmetric, vector))
    return out
