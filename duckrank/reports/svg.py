"""Charts as inline SVG text for the HTML report: a line chart (metric@k curves) and the sorted
per-query differences against a baseline. No matplotlib and nothing fetched: the page stays one
file that opens without a network.

Colours are Okabe and Ito's ("Color Universal Design", https://jfly.uni-koeln.de/color/), as in
``duckrank.reports.plots``: gains blue, losses vermillion. Every plotted point carries its
numbers as ``data-`` attributes and a ``<title>`` (a tooltip), so a test reads back what is drawn.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from duckrank.reports.html import Markup, attributes, escape
from duckrank.reports.plots import GAIN_COLOR, LOSS_COLOR, PALETTE

# The plotting area inside the SVG: margins for the axes' labels, and room on the right for a
# legend that never covers a line.
_LEFT, _TOP, _BOTTOM = 60, 16, 44
_LEGEND = 170


def ticks(low: float, high: float, count: int = 5, integer: bool = False) -> list[float]:
    """About ``count`` round tick values covering [low, high] (steps of 1, 2 or 5 x 10^n; at
    least 1 when ``integer``: k and query positions are whole)."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [low] if math.isfinite(low) else [0.0]
    raw = (high - low) / max(count - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    if integer:
        step = max(step, 1)
    first = math.floor(low / step) * step
    return [round(first + i * step, 12) for i in range(int(math.ceil((high - first) / step)) + 1)]


def _number(value: float) -> str:
    """A tick label: thousands separators for whole numbers, else up to 4 significant digits."""
    if float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:.4g}"


class _Frame:
    """The mapping from data to SVG coordinates of one chart."""

    def __init__(self, width: int, height: int, x: Sequence[float], y: Sequence[float],
                 legend: bool) -> None:
        self.right = width - (_LEGEND if legend else 36)  # room for the last tick label
        self.bottom = height - _BOTTOM
        self.x_ticks = ticks(min(x), max(x), integer=True)
        self.y_ticks = ticks(min(y), max(y))
        self.x_low, self.x_high = min(self.x_ticks[0], min(x)), max(self.x_ticks[-1], max(x))
        self.y_low, self.y_high = min(self.y_ticks[0], min(y)), max(self.y_ticks[-1], max(y))

    def px(self, value: float) -> float:
        span = (self.x_high - self.x_low) or 1.0
        return _LEFT + (value - self.x_low) / span * (self.right - _LEFT)

    def py(self, value: float) -> float:
        span = (self.y_high - self.y_low) or 1.0
        return self.bottom - (value - self.y_low) / span * (self.bottom - _TOP)

    def axes(self, x_label: str, y_label: str, x_ticks: bool = True) -> list[str]:
        parts = [f'<line x1="{_LEFT}" y1="{self.bottom}" x2="{self.right}" y2="{self.bottom}" '
                 'stroke="#333"/>',
                 f'<line x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{self.bottom}" stroke="#333"/>']
        for value in self.y_ticks:
            y = self.py(value)
            parts.append(f'<line x1="{_LEFT}" y1="{y:.1f}" x2="{self.right}" y2="{y:.1f}" '
                         'stroke="#e5e5e5"/>')
            parts.append(f'<text x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
                         f"{escape(_number(value))}</text>")
        for value in self.x_ticks if x_ticks else []:
            x = self.px(value)
            parts.append(f'<text x="{x:.1f}" y="{self.bottom + 16}" text-anchor="middle">'
                         f"{escape(_number(value))}</text>")
        middle = (_LEFT + self.right) / 2
        parts.append(f'<text x="{middle:.1f}" y="{self.bottom + 34}" text-anchor="middle">'
                     f"{escape(x_label)}</text>")
        parts.append(f'<text transform="translate(14 {(self.bottom + _TOP) / 2:.1f}) '
                     f'rotate(-90)" text-anchor="middle">{escape(y_label)}</text>')
        return parts


def _svg(width: int, height: int, label: str, parts: Sequence[str]) -> Markup:
    return Markup(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
                  f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(label)}">'
                  + "".join(parts) + "</svg>")


def line_chart(series: Mapping[str, tuple[Sequence[float], Sequence[float]]], x_label: str,
               y_label: str, *, metric: str = "", width: int = 720,
               height: int = 320) -> Markup:
    """One line per system through its (x, y) points, each point a circle with ``data-system``,
    ``data-k`` and ``data-value``; the legend right of the plotting area."""
    xs = [float(v) for x, _ in series.values() for v in x] or [0.0]
    ys = [float(v) for _, y in series.values() for v in y] or [0.0]
    frame = _Frame(width, height, xs, ys, legend=True)
    parts = frame.axes(x_label, y_label)
    for index, (name, (x, y)) in enumerate(series.items()):
        color = PALETTE[index % len(PALETTE)]
        dash = ("", ' stroke-dasharray="6 3"', ' stroke-dasharray="2 3"')[
            index // len(PALETTE) % 3]
        points = " ".join(f"{frame.px(a):.1f},{frame.py(b):.1f}" for a, b in zip(x, y, strict=True))
        parts.append(f'<polyline points="{points}" fill="none" stroke="{color}" '
                     f'stroke-width="2"{dash}/>')
        for a, b in zip(x, y, strict=True):
            parts.append(
                f'<circle class="point" cx="{frame.px(a):.1f}" cy="{frame.py(b):.1f}" r="3" '
                f'fill="{color}"{attributes(data_system=name, data_metric=metric, data_k=int(a))}'
                f' data-value="{float(b)!r}"><title>{escape(name)}: {escape(y_label)} at k = '
                f"{int(a)}: {float(b):.4f}</title></circle>")
        legend_y = _TOP + 8 + 18 * index
        parts.append(f'<line x1="{frame.right + 14}" y1="{legend_y}" x2="{frame.right + 38}" '
                     f'y2="{legend_y}" stroke="{color}" stroke-width="2"{dash}/>')
        parts.append(f'<text x="{frame.right + 44}" y="{legend_y + 4}">{escape(name)}</text>')
    return _svg(width, height, f"{y_label} against {x_label}", parts)


def difference_chart(differences: np.ndarray, shown: np.ndarray, mean: float, noun: str,
                     label: str, *, width: int = 720, height: int = 220) -> Markup:
    """The per-query differences, sorted from the largest gain to the largest loss, as bars
    through the positions ``shown`` of ``differences`` (a subset keeps the page small; the
    curve is monotone, so it looks the same), blue above zero and vermillion below, with zero
    and the mean marked."""
    n = len(differences)
    if n == 0:
        return _svg(width, 40, label, [f'<text x="10" y="24">no {escape(noun)} with a value '
                                       "for both systems</text>"])
    values = differences[shown]
    frame = _Frame(width, height, [1.0, float(n)], [float(values.min()), float(values.max()),
                                                   0.0], legend=False)
    parts = frame.axes(f"{noun} (1 to {n:,}), sorted by difference", label)
    bar = max((frame.right - _LEFT) / len(shown), 0.5)
    zero = frame.py(0.0)
    for position, value in zip(shown, values, strict=True):
        top, height_px = min(zero, frame.py(value)), abs(frame.py(value) - zero)
        color = GAIN_COLOR if value > 0 else LOSS_COLOR
        parts.append(f'<rect x="{frame.px(position + 1) - bar / 2:.2f}" y="{top:.2f}" '
                     f'width="{bar:.2f}" height="{height_px:.2f}" fill="{color}"/>')
    parts.append(f'<line x1="{_LEFT}" y1="{zero:.1f}" x2="{frame.right}" y2="{zero:.1f}" '
                 'stroke="#000"/>')
    mean_y = frame.py(mean)
    parts.append(f'<line class="mean-line" x1="{_LEFT}" y1="{mean_y:.1f}" x2="{frame.right}" '
                 f'y2="{mean_y:.1f}" stroke="#000" stroke-dasharray="5 4" '
                 f'data-mean="{mean!r}"><title>mean {mean:+.4f}</title></line>')
    return _svg(width, height, label, parts)
