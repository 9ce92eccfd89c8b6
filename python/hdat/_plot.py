"""hdat.plot: the figures `hdat plot DIR` draws (gnuplot: PNG, SVG and the script), for a result or a folder."""

import base64
import os
import sys
from pathlib import Path

from . import _core


class Figures(list):
    """The PNG files drawn (an SVG and the gnuplot script beside each); a notebook shows them inline.
    `.result` is the result they were drawn from: holding it keeps a private result folder, where the
    figures lie, from being removed while the figures are in use."""

    result = None

    def _repr_html_(self):
        parts = []
        for path in self:
            data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
            parts.append(f'<figure><img src="data:image/png;base64,{data}"/><figcaption>{Path(path).name}</figcaption></figure>')
        return "".join(parts)


def plot(what, *, out=None, observables=None, contours=None, x=None, y=None, heatmap=False, lines=False, together=False, generic=False):
    """Draw the figures of a Result (or SweepResult) or of an output folder, as `hdat plot DIR` does.

    what        a result of hdat.curve / simulate / validate / analyze / sweep / geometry, or a folder
    out         draw into this folder (the result's files are saved there first); default: the
                result's own folder (the folder itself when `what` is a path)
    observables, contours, x, y, heatmap, lines, together
                sweep folders: as --observable, --contour, --x, --y, --heatmap, --lines, --together
    generic     the generic figures even where the model has its own
    Returns the PNG paths (Figures).
    """
    if hasattr(what, "save") and hasattr(what, "dir"):
        folder = what.save(out) if out is not None else what.dir
    else:
        folder = Path(os.fspath(what))
        if out is not None:
            from ._results import copy_folder

            Path(out).mkdir(parents=True, exist_ok=True)
            folder = copy_folder(folder, out)
    if isinstance(observables, str):
        observables = [observables]
    if contours is not None and not hasattr(contours, "__iter__"):
        contours = [contours]
    raw = _core.plot(str(folder), list(observables or []), [float(c) for c in (contours if contours is not None else [])], x or "", y or "",
                     bool(heatmap), bool(lines), bool(together), bool(generic))
    if raw["notes"]:
        sys.stderr.write(raw["notes"])
    figures = Figures(Path(p) for p in raw["figures"])
    if hasattr(what, "save") and hasattr(what, "dir") and out is None:
        figures.result = what  # the figures lie in the result's folder: it lives as long as they are held
    return figures
