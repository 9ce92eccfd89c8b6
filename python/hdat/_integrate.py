"""hdat.integrate: your own system dx/dt = f(t, x), integrated by hdat's engine (hdat::integrate:
Boost.Odeint steppers with error control, dense output at the requested times, statistics)."""

from collections.abc import Mapping

import numpy as np

from . import _core
from ._errors import InputError, Interrupted, NumericalError

METHODS = tuple(_core.methods())


def _bad(key, message):
    return InputError(f"parameter '{key}': {message}", key)


class _Layout:
    """Named blocks of the flat state, as hdat::StateLayout stores them: in order, each column-major."""

    def __init__(self, blocks):
        self.names, self.shapes, self.offsets = [], [], []
        offset = 0
        for name, shape in blocks.items():
            shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
            if not 1 <= len(shape) <= 2 or any(not isinstance(s, (int, np.integer)) or isinstance(s, bool) or s < 1 for s in shape):
                raise _bad("blocks", f"block {name!r}: the shape must be (rows,) or (rows, cols) of positive integers, got {shape!r}")
            self.names.append(str(name))
            self.shapes.append(tuple(int(s) for s in shape))
            self.offsets.append(offset)
            offset += int(np.prod(shape))
        self.size = offset

    def cxx(self):
        """(name, rows, cols) for hdat::StateLayout (a vector block is one column)."""
        return [(n, s[0], s[1] if len(s) == 2 else 1) for n, s in zip(self.names, self.shapes)]

    def split(self, flat):
        """{name: array of the block's shape} (views into `flat`; leading axes of `flat` are kept)."""
        lead = flat.shape[:-1]
        out = {}
        for name, shape, off in zip(self.names, self.shapes, self.offsets):
            part = flat[..., off:off + int(np.prod(shape))]
            if len(shape) == 2:
                part = part.reshape(lead + (shape[1], shape[0])).swapaxes(-1, -2)  # column-major block
            out[name] = part
        return out

    def join(self, values, what):
        """A flat state from {name: array} (every block present, with its shape)."""
        if not isinstance(values, Mapping):
            flat = np.asarray(values, dtype=float).reshape(-1)
            if flat.size != self.size:
                raise ValueError(f"{what} has {flat.size} values; the blocks hold {self.size}")
            return flat
        missing = [n for n in self.names if n not in values]
        extra = [k for k in values if k not in self.names]
        if missing or extra:
            raise ValueError(f"{what}: blocks {', '.join(self.names)} expected" + (f"; missing {', '.join(missing)}" if missing else "")
                             + (f"; unknown {', '.join(map(str, extra))}" if extra else ""))
        parts = []
        for name, shape in zip(self.names, self.shapes):
            a = np.asarray(values[name], dtype=float)
            if a.shape != shape:
                raise ValueError(f"{what}: block {name!r} has shape {a.shape}, expected {shape}")
            parts.append(a.reshape(-1, order="F"))
        return np.concatenate(parts)


class Solution:
    """The states at the requested times and the solver's Summary.

    t        the times reached (the requested ones up to where the run stopped)
    x        the states, one row per time (shape (len(t), n))
    summary  hdat.Summary: status, message, method, tolerances, rhs_calls, accepted_steps,
             rejected_steps, wall_seconds ... (the C++ IntegrateSummary)
    events   the events that fired, in time order: dicts with event (index), name, t (where g crosses
             zero, located between steps by the engine: root finding on the stepper's own solution,
             to near machine precision whatever the grid t), t_crossing (the same time), direction
             (+1 upwards, -1 downwards) and x (the state there)
    sol["Q"] with blocks: the block Q at every time (shape (len(t), rows, cols)); sol.blocks: all
    """

    def __init__(self, t, x, summary, layout, events):
        self.t, self.x, self.summary, self.events = t, x, summary, events
        self._layout = layout
        self.blocks = layout.split(x) if layout is not None else {}

    status = property(lambda self: self.summary.status)
    message = property(lambda self: self.summary.message)
    ok = property(lambda self: self.summary.ok)

    def __getitem__(self, name):
        if name not in self.blocks:
            raise KeyError(f"{name!r}: the blocks are {', '.join(self.blocks) or 'none (give blocks=...)'}")
        return self.blocks[name]

    @property
    def final(self):
        """The last state reached ({name: array} with blocks)."""
        last = self.x[-1]
        return self._layout.split(last) if self._layout is not None else last

    def __repr__(self):
        return f"<hdat.Solution {len(self.t)} times; {self.summary.brief()}>"


def _event_list(events):
    if events is None:
        return []
    return list(events) if isinstance(events, (list, tuple)) else [events]


def integrate(f, x0, t, *, method="dopri5", rtol=1e-8, atol=1e-10, log_time=False, time_scale=1.0, events=None, blocks=None,
              initial_step=0.0, max_step=0.0, max_steps=10_000_000, divergence=1e12, check=True):
    """Integrate dx/dt = f(t, x) from x0 at t[0] and return the states at every time of t.

    f         f(t, x) -> dx/dt; x is a NumPy array (with `blocks`: a dict of the named arrays, and f may
              return such a dict or the flat derivative)
    x0        the initial state (with blocks: a dict {name: array} or the flat vector)
    t         the times, sorted, t[0] the start (its state is x0)
    method    dopri5 (Dormand-Prince 5(4), dense output) | rkf78 | cash_karp54 | rosenbrock4 (stiff,
              finite-difference Jacobian)
    rtol, atol   the error controller's tolerances
    log_time  integrate in tau = log(1 + t / time_scale): flows that span many decades of t
    events    g(t, x) -> float, or a list of them: an event fires where g changes sign (located between
              the accepted steps; g.direction = +1 / -1 for one direction only, like SciPy); it stops
              the run there unless g.terminal is False
    blocks    {"Q": (K, K), "R": (K, M), "v": (K,)}: named state blocks (hdat::StateLayout)
    initial_step, max_step (0: automatic / unlimited), max_steps, divergence (|x_k| above it stops the run)
    check     True (default): a run that did not reach t[-1] for a numerical reason (non-finite or
              diverging state, max_steps, step-size underflow) raises hdat.NumericalError, whose
              .result is the Solution up to where it stopped; False: the Solution is returned and
              its .status / .ok say what happened
    Returns a Solution (completed, or stopped by an event); Ctrl-C raises hdat.Interrupted carrying
    the part computed.
    """
    # Types here; ranges by the engine's own IntegrateOptions::validate (InputError naming the option).
    if not isinstance(method, str):
        raise _bad("method", f"must be one of {' | '.join(METHODS)}, got {method!r}")
    for key, value in (("rtol", rtol), ("atol", atol), ("time_scale", time_scale), ("initial_step", initial_step), ("max_step", max_step),
                       ("divergence", divergence)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise _bad(key, f"must be a number, got {value!r}")
    if not isinstance(check, (bool, np.bool_)):
        raise _bad("check", f"must be True (a numerical failure raises hdat.NumericalError) or False (it is the status), got {check!r}")
    if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)):
        raise _bad("max_steps", f"must be a whole number, got {max_steps!r}")
    if not callable(f):
        raise _bad("f", "must be callable as f(t, x) -> dx/dt")

    layout = _Layout(blocks) if blocks else None
    try:
        flat0 = layout.join(x0, "x0") if layout is not None else np.asarray(x0, dtype=float)
    except (TypeError, ValueError) as e:
        raise _bad("x0", str(e)) from None
    if flat0.ndim != 1 or flat0.size == 0:
        raise _bad("x0", f"must be a non-empty vector (shape (n,)), got shape {flat0.shape}")
    times = np.asarray(t, dtype=float)
    if times.ndim != 1 or times.size == 0:
        raise _bad("t", "must be a non-empty one-dimensional sequence of times (t[0] is the start)")
    if not np.all(np.isfinite(times)):
        raise _bad("t", "must hold finite times")
    if np.any(np.diff(times) < 0):
        raise _bad("t", "must be sorted (non-decreasing)")
    if log_time and not times[0] > -time_scale:
        raise _bad("t", f"log time needs t[0] > -time_scale ({-time_scale:g}), got {times[0]:g}")

    if layout is not None:
        def rhs(tt, x):
            d = f(tt, layout.split(x))
            return layout.join(d, "f(t, x)") if isinstance(d, Mapping) else d
        state = layout.split
    else:
        rhs, state = f, (lambda x: x)

    gs = _event_list(events)
    for i, g in enumerate(gs):
        if not callable(g):
            raise _bad("events", f"event {i} is not callable as g(t, x) -> float")
    # The engine locates the crossings; each event travels by its index.
    specs = [(g, str(i), bool(getattr(g, "terminal", True)), int(getattr(g, "direction", 0))) for i, g in enumerate(gs)]

    raw = _core.integrate(rhs, flat0, times, layout.cxx() if layout is not None else [], method, float(rtol), float(atol),
                          float(initial_step), float(max_step), int(max_steps), bool(log_time), float(time_scale), float(divergence), specs)
    fired = [{"event": int(i), "name": getattr(gs[int(i)], "__name__", f"event {i}"), "t": t_e, "t_crossing": t_e, "direction": d,
              "x": state(x_e)} for i, t_e, x_e, d in raw["events"]]
    solution = Solution(raw["t"], raw["x"], raw["summary"], layout, fired)
    if raw["interrupted"]:
        raise Interrupted("hdat.integrate: interrupted; the part computed is in .result", solution)
    if check and not solution.ok:
        raise NumericalError(_failure_text(solution), solution)
    return solution


def _failure_text(solution):
    """What went wrong, where, and what the exception carries (one paragraph)."""
    s = solution.summary
    reached = f"t = {solution.t[-1]:.6g}" if len(solution.t) else "no requested time"
    return (f"hdat.integrate: {s.status}: {s.message or 'the run stopped'} (from t = {s.t_start:.6g} towards {s.t_requested:.6g}; "
            f"the last requested time reached is {reached}). The states up to there are in .result (an hdat.Solution); "
            f"check=False returns it instead of raising.")
