"""The report as one document, written twice: Markdown and a self-contained HTML page, each from
a jinja2 template (present/templates/), its tables from pandas (to_markdown, Styler)."""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup
from pandas.io.formats.style import Styler

RESULT_CLASS = {"holds": "pass", "does not hold": "fail", "inconclusive": "unsure", "not scored": "na",
                "holds, fragile": "unsure", "does not hold, fragile": "unsure",
                "inconclusive, fragile": "unsure"}


STYLE = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;"
         "line-height:1.4}table{border-collapse:collapse;margin:1em 0;font-size:90%}"
         "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}"
         "th{background:#eee}img{max-width:100%}footer{font-size:80%;color:#555}"
         ".lead{font-size:115%;font-weight:bold}td.pass{background:#d9f2d9}"
         "td.fail{background:#f8d0d0}td.na{background:#eee;color:#555}td.unsure{background:#fbeec1}"
         "details{margin:.4em 0;border-top:1px solid #ddd;padding-top:.3em}"
         "summary{cursor:pointer;font-weight:bold;font-size:105%}.note{color:#555}"
         "details.why{border:0;padding:0;margin:0 0 .3em}details.why summary{font-weight:normal;"
         "font-size:90%;color:#555}"
         "td{overflow-wrap:anywhere}table.scorecard td:nth-child(2){min-width:18em}"
         "table.scorecard td:last-child{color:#555;font-size:90%}")


@dataclass(frozen=True)
class Block:
    """One part of the report, in order: the templates (templates/report.{html,md}.j2) draw it
    by its kind: title, lead, heading, section (lines or a table; open or collapsed), verdicts,
    figure, footer."""

    kind: str
    text: str = ""
    title: str = ""
    lines: list[str] | None = None
    table: pd.DataFrame | None = None
    collapsed: bool = False
    note: str | None = None
    css: str = ""
    items: list[tuple[str, str | None]] = field(default_factory=list)
    name: str = ""
    encoded: str = ""
    open: bool = False


def md_table(frame: pd.DataFrame) -> str:
    """A Markdown table (pandas, through tabulate), its column padding dropped: one row per line
    as short as its cells (a report's wide tables stay readable in a diff)."""
    table = frame.astype(str).to_markdown(index=False)
    return "\n".join(PADDING.sub(" | ", line).strip() for line in table.splitlines())


PADDING = re.compile(r" *\| *")


def html_table(frame: pd.DataFrame, css: str = "", number: int = 0) -> Markup:
    """An HTML table (pandas' Styler): cells escaped, a claim's result cell classed (pass, fail,
    unsure, na) for its colour; ids fixed by the table's place, so the page is reproducible."""
    classes = frame.map(lambda v: RESULT_CLASS.get(v, "") if isinstance(v, str) else "")
    styler = (Styler(frame.astype(str), cell_ids=False, uuid=f"t{number}").hide(axis="index")
              .format(escape="html").set_td_classes(classes))
    if css:
        styler = styler.set_table_attributes(f'class="{css}"')
    return Markup(styler.to_html())


def _environment() -> Environment:
    env = Environment(loader=PackageLoader("perfstudy.present", "templates"),
                      autoescape=select_autoescape(["html.j2"]), keep_trailing_newline=True,
                      undefined=StrictUndefined)
    env.filters["md_table"] = md_table
    env.filters["html_table"] = html_table
    return env


class Document:
    """The report as Markdown and as one self-contained HTML page (images inlined): the blocks
    added in order, drawn by two jinja2 templates."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.blocks = [Block("title", text=title)]

    def lead(self, text: str | None) -> None:
        if text:
            self.blocks.append(Block("lead", text=text))

    def heading(self, title: str) -> None:
        self.blocks.append(Block("heading", text=title))

    def section(self, title: str, content: list[str] | pd.DataFrame, *, collapsed: bool = False,
                note: str | None = None, css: str = "") -> None:
        lines, table = (content, None) if isinstance(content, list) else (None, content)
        self.blocks.append(Block("section", title=title, lines=lines, table=table,
                                 collapsed=collapsed, note=note, css=css))

    def verdicts(self, title: str, items: list[tuple[str, str | None]]) -> None:
        """One line per arm, its reasoning one click away (<details class='why'>; in Markdown, the
        line's sub-item)."""
        self.blocks.append(Block("verdicts", title=title, items=list(items)))

    def figure(self, title: str, path: Path, *, open_: bool = False) -> None:
        self.blocks.append(Block("figure", title=title, name=path.name, open=open_,
                                 encoded=base64.b64encode(path.read_bytes()).decode()))

    def footer(self, text: str) -> None:
        self.blocks.append(Block("footer", text=text))

    def markdown(self) -> str:
        return _environment().get_template("report.md.j2").render(blocks=self.blocks)

    def html(self, title: str) -> str:
        return _environment().get_template("report.html.j2").render(
            blocks=self.blocks, title=title, style=STYLE) + "\n"
