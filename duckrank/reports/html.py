"""HTML pieces that the reports share: escaping, a table, and the style sheet of a report page.

Pure text, no import of a report: the comparison report's notebook table
(``Report._repr_html_``) and the HTML report page (``duckrank.reports.html_report``) both build
on it. Every text that comes from data (system names, metric labels, query and item ids) goes
through ``escape``; the callers pass markup they built themselves (``<strong>``, ``<sup>``) as
``Markup``.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any


class Markup(str):
    """HTML built here from escaped parts: ``cell`` and ``table`` put it in as it is."""


def escape(text: Any) -> Markup:
    """``text`` as HTML text (``& < > " '`` escaped), whatever its type."""
    return Markup(html.escape(str(text), quote=True))


def cell(value: Any) -> Markup:
    """A cell's content: ``Markup`` as it is, anything else escaped."""
    return value if isinstance(value, Markup) else escape(value)


def attributes(**values: Any) -> str:
    """`` name="value"`` pairs (escaped; ``data_x`` is written ``data-x``; None left out)."""
    return "".join(f' {name.replace("_", "-")}="{escape(value)}"'
                   for name, value in values.items() if value is not None)


def table(header: Sequence[Any], rows: Sequence[Sequence[Any]], *, caption: Any = None,
          numeric: Sequence[int] = (), row_attributes: Sequence[str] | None = None,
          table_attributes: str = "") -> Markup:
    """A ``<table>``: ``header`` in ``<th>``, ``rows`` in ``<td>`` (the columns ``numeric``
    right-aligned), each row with its ``row_attributes`` (from ``attributes``), and
    ``caption`` under it."""
    right, aligned = frozenset(numeric), ' class="num"'

    def line(values: Sequence[Any], tag: str) -> str:
        return "".join(f"<{tag}{aligned if i in right else ''}>{cell(v)}</{tag}>"
                       for i, v in enumerate(values))

    extra = row_attributes or [""] * len(rows)
    body = "\n".join(f"<tr{a}>{line(r, 'td')}</tr>" for r, a in zip(rows, extra, strict=True))
    caption_html = f"<caption>{cell(caption)}</caption>" if caption is not None else ""
    return Markup(f"<table{table_attributes}>{caption_html}\n<thead><tr>{line(header, 'th')}"
                  f"</tr></thead>\n<tbody>\n{body}\n</tbody></table>")


def script_json(value: Any) -> Markup:
    """``value`` as JSON that is safe inside ``<script type="application/json">``: no ``</``
    (which would end the script), no ``<!--``, and no U+2028/U+2029."""
    text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    for character in ("<", ">", "&", "\u2028", "\u2029"):
        text = text.replace(character, f"\\u{ord(character):04x}")
    return Markup(text)


# The report page's style: system fonts (nothing fetched), the Okabe-Ito colours of the plots.
STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 1.5rem;
       color: #1a1a1a; max-width: 1200px; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: 0.5rem 0; font-variant-numeric: tabular-nums; }
th, td { padding: 0.25rem 0.6rem; border-bottom: 1px solid #ddd; text-align: left;
         vertical-align: top; }
th { border-bottom: 2px solid #333; }
td.num, th.num { text-align: right; }
caption { caption-side: bottom; text-align: left; font-size: 0.85rem; color: #444;
          padding-top: 0.4rem; max-width: 60rem; }
sup { color: #0072B2; font-weight: 600; }
.ci { color: #666; font-size: 0.85em; }
.gain { color: #0072B2; } .loss { color: #D55E00; }
.rankings { display: flex; gap: 2rem; flex-wrap: wrap; }
.rankings ol { padding-left: 2.2rem; margin: 0.3rem 0; }
.rankings li { padding: 0.1rem 0.3rem; font-family: ui-monospace, monospace; }
li.relevant { background: #cfe6f5; border-left: 4px solid #0072B2; }
li.judged { background: #f3f3f3; border-left: 4px solid #999; }
li.unjudged { border-left: 4px solid transparent; }
.legend-relevant { background: #cfe6f5; padding: 0 0.3rem; }
.legend-judged { background: #f3f3f3; padding: 0 0.3rem; }
.grade { font-size: 0.8em; color: #333; margin-left: 0.5rem; }
tr.query { cursor: pointer; } tr.query:hover, tr.query.chosen { background: #fff3d6; }
.note { color: #555; font-size: 0.9rem; }
svg text { font-family: system-ui, sans-serif; font-size: 11px; }
"""
