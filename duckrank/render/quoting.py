"""Quoting for the text duckrank writes around names that come from data (a system named by a
file's stem or a tag column, a metric label, an id): one rule per output language, so a name is
shown as written and never read as markup.

* SQL: ``quote_literal`` and ``quote_identifier`` (every caller-supplied name reaches SQL through
  these or as a query parameter).
* LaTeX: ``latex_text``.
* Markdown (GitHub's, with its HTML, tables and math): ``markdown_text``.
* Terminal text: ``plain_text``.

Plots need no quoting: ``duckrank.reports.plots`` draws every text with mathtext and TeX off.
"""

import re


def quote_literal(text: str) -> str:
    """``text`` as a SQL string literal: ``it's`` -> ``'it''s'``."""
    return "'" + text.replace("'", "''") + "'"


def quote_identifier(name: str) -> str:
    """``name`` as a quoted SQL identifier, its double quotes doubled."""
    return '"' + name.replace('"', '""') + '"'


_LATEX_SPECIAL = {c: "\\" + c for c in "&%$#_{}"} | {
    "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "\\": r"\textbackslash{}",
    "\n": " ", "\r": " ",
}


def latex_text(text: str) -> str:
    """``text`` as LaTeX text: its special characters escaped, a line break a space."""
    return "".join(_LATEX_SPECIAL.get(c, c) for c in text)


# CommonMark lets a backslash escape any ASCII punctuation; these are the characters that start
# inline markup in a table cell: emphasis (* _ ~), code (`), links and images ([ ]), HTML and
# autolinks (<), entities (&), GitHub's math ($), the cell separator (|) and the backslash
# itself. Block markup (#, >, -, 1.) only counts at the start of a line, which a cell is not.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_~\[\]<>&$|])")
_LINE_BREAK = re.compile(r"\r\n|[\r\n]")


def markdown_text(text: str) -> str:
    """``text`` as Markdown inline text (a table cell, a paragraph): shown as written, never as
    emphasis, a link, HTML or math; a line break is ``<br>`` so that a table row stays one
    line, and other control characters are shown as ``plain_text`` shows them."""
    return plain_text(_LINE_BREAK.sub("<br>", _MARKDOWN_SPECIAL.sub(r"\\\1", text)))


# C0 and C1 control characters, DEL included (a terminal acts on ESC sequences).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def plain_text(text: str) -> str:
    """``text`` for an aligned text table on a terminal: control characters (a line break, a tab,
    an escape sequence) shown as Python escapes (``\\n``, ``\\x1b``), so a name stays on its row
    and cannot drive the terminal."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
