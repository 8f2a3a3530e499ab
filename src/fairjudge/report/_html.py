"""Self-contained HTML reports from autoescaping jinja2 templates.

Every string a template receives is escaped there: table headers and cells (formatted to
text here first), judge and configuration names, the provenance header. Nothing is marked
safe; a figure goes in as a ``data:image/png;base64,`` URI that we make from the PNG
bytes, whose characters need no escaping.
"""

from __future__ import annotations

import base64
import functools
import io
import shlex
from dataclasses import dataclass
from datetime import timezone

import numpy as np
import pandas as pd

from fairjudge.report._plots import _pyplot
from fairjudge.report._provenance import Provenance


@functools.lru_cache(maxsize=1)
def _environment():
    import jinja2

    return jinja2.Environment(loader=jinja2.PackageLoader("fairjudge.report", "templates"),
                              autoescape=True, undefined=jinja2.StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True)


@dataclass(frozen=True)
class HtmlTable:
    """A table as text, for a template to escape cell by cell.

    Attributes
    ----------
    header : tuple of str
        The index's name (``""`` if it has none), then the column names.
    rows : tuple of tuple of str
        Per row, its index label, then its cells.
    """

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def format_cell(value, digits: int = 3) -> str:
    """A table cell as text: floats to ``digits`` decimals, missing values empty.

    >>> [format_cell(v) for v in (0.12345, 7, float("nan"), None, "x<y")]
    ['0.123', '7', '', '', 'x<y']
    """
    if value is None or value is pd.NA or value is pd.NaT:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return "" if np.isnan(value) else f"{value:.{digits}f}"
    return str(value)


def html_table(frame: pd.DataFrame, *, digits: int = 3) -> HtmlTable:
    """Format a DataFrame (index, columns and cells) as text for a template.

    Parameters
    ----------
    frame : pandas.DataFrame
        Shown with its index as the first column.
    digits : int
        Decimals of floating-point cells.
    """
    index_name = "" if frame.index.name is None else str(frame.index.name)
    header = (index_name, *(format_cell(c, digits) for c in frame.columns))
    rows = tuple((format_cell(label, digits), *(format_cell(v, digits) for v in values))
                 for label, values in zip(frame.index, frame.itertuples(index=False, name=None)))
    return HtmlTable(header, rows)


@dataclass(frozen=True)
class HeatTable:
    """A matrix as a table of coloured cells, each with its value on hover.

    Attributes
    ----------
    header : tuple of str
        The index's name, then the column names.
    rows : tuple of (str, tuple of (text, background, ink, tooltip))
        Per row, its label and its cells: the value as text, the CSS colours of the cell
        and of its text, and the tooltip (row, column and value).
    """

    header: tuple[str, ...]
    rows: tuple


def heat_table(frame: pd.DataFrame, *, center: float = 0.0, low: float | None = None,
               high: float | None = None, digits: int = 2,
               text: pd.DataFrame | None = None) -> HeatTable:
    """Colour a numeric DataFrame on a diverging scale around ``center`` (blue below, red
    above; the scale spans ``[low, high]``, by default symmetric around ``center`` out to
    the largest deviation; values beyond it take its end colour). Missing values stay
    blank. Text on a cell is black or white, whichever contrasts more with it. ``text``
    (same shape) replaces the value shown in a cell, e.g. to add a level beside it."""
    from matplotlib import colormaps

    values = frame.to_numpy(dtype=float)
    finite = values[np.isfinite(values)]
    reach = float(np.max(np.abs(finite - center))) if finite.size else 1.0
    reach = reach or 1.0
    low = center - reach if low is None else low
    high = center + reach if high is None else high
    cmap = colormaps["RdBu_r"]
    shown = None if text is None else text.reindex(index=frame.index,
                                                   columns=frame.columns).to_numpy(dtype=object)
    rows = []
    for i, (label, row) in enumerate(zip(frame.index, values)):
        cells = []
        for j, (column, value) in enumerate(zip(frame.columns, row)):
            if not np.isfinite(value):
                cells.append(("", "transparent", "inherit", f"{label} / {column}: n/a"))
                continue
            # Map [low, center] to [0, 0.5] and [center, high] to [0.5, 1].
            if value < center:
                share = 0.5 * (value - low) / (center - low) if center > low else 0.5
            else:
                share = 0.5 + 0.5 * (value - center) / (high - center) if high > center \
                    else 0.5
            r, g, b, _ = cmap(float(np.clip(share, 0.0, 1.0)))
            luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
            label_text = f"{value:.{digits}f}" if shown is None else str(shown[i, j])
            cells.append((label_text, f"rgb({r * 255:.0f}, {g * 255:.0f}, {b * 255:.0f})",
                          "#000" if luminance > 0.5 else "#fff",
                          f"{label} / {column}: {value:.{max(digits, 3)}f}"))
        rows.append((format_cell(label), tuple(cells)))
    index_name = "" if frame.index.name is None else str(frame.index.name)
    return HeatTable((index_name, *(format_cell(c) for c in frame.columns)), tuple(rows))


def figure_data_uri(fig) -> str:
    """The figure as a ``data:image/png;base64,`` URI (the figure is closed)."""
    plt = _pyplot()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _provenance_fields(provenance: Provenance) -> dict:
    """The header's fields as text; ``None`` where the caller recorded nothing."""
    return {"command": None if provenance.command is None else shlex.join(provenance.command),
            "inputs": [(f.path, f.sha256) for f in provenance.inputs],
            "seed": None if provenance.seed is None else str(provenance.seed),
            "version": provenance.version,
            "created": provenance.created.astimezone(timezone.utc).strftime(
                "%Y-%m-%d %H:%M:%S UTC")}


def render_html(template: str, *, title: str, provenance: Provenance | None = None,
                **context) -> str:
    """Render one report template (``templates/<template>``) under the shared page shell.

    ``context`` holds text, :class:`HtmlTable` objects and figure URIs; the template
    escapes every string. Without ``provenance`` the header records the version and date
    and says that the command, inputs and seed were not recorded.
    """
    fields = _provenance_fields(provenance if provenance is not None else Provenance())
    return _environment().get_template(template).render(title=title, provenance=fields,
                                                        **context)
