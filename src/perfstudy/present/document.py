"""The report as one document, written twice: Markdown and a self-contained HTML page."""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any

import pandas as pd


def _md_table(frame: pd.DataFrame) -> str:
    head = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "---|" * len(frame.columns)
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def _html_table(frame: pd.DataFrame, css: str = "") -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = "".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>"
                   for row in frame.itertuples(index=False))
    attr = f" class='{css}'" if css else ""
    return f"<table{attr}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _cell(value: Any) -> str:
    """A table cell; a claim's result coloured (holds / does not hold / not scored)."""
    css = RESULT_CLASS.get(value) if isinstance(value, str) else None
    attr = f" class='{css}'" if css else ""
    return f"<td{attr}>{html.escape(str(value))}</td>"


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


class Document:
    """The report as Markdown and as one self-contained HTML page (images inlined)."""

    def __init__(self, title: str) -> None:
        self.md = [f"# {title}", ""]
        self.body = [f"<h1>{html.escape(title)}</h1>"]

    def lead(self, text: str | None) -> None:
        if text:
            self.md += [f"**{text}**", ""]
            self.body.append(f"<p class='lead'>{html.escape(text)}</p>")

    def heading(self, title: str) -> None:
        self.md += [f"## {title}", ""]
        self.body.append(f"<h2>{html.escape(title)}</h2>")

    def section(self, title: str, content: list[str] | pd.DataFrame, *, collapsed: bool = False,
                note: str | None = None, css: str = "") -> None:
        self.md += [f"{'###' if collapsed else '##'} {title}", ""]
        inner = f"<p class='note'>{html.escape(note)}</p>" if note else ""
        if note:
            self.md += [f"_{note}_", ""]
        if isinstance(content, list):
            self.md += [f"- {line}" for line in content] + [""]
            inner += "<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in content) + "</ul>"
        else:
            self.md += [_md_table(content), ""]
            inner += _html_table(content, css)
        self.body.append(f"<details><summary>{html.escape(title)}</summary>{inner}</details>"
                         if collapsed else f"<h2>{html.escape(title)}</h2>{inner}")

    def verdicts(self, title: str, items: list[tuple[str, str | None]]) -> None:
        """One line per arm, its reasoning one click away (<details class='why'>; in Markdown, the
        line's sub-item)."""
        self.md += [f"## {title}", ""]
        inner = []
        for line, why in items:
            self.md.append(f"- {line}")
            if why:
                self.md.append(f"  - why: {why}")
            inner.append(f"<li>{html.escape(line)}" + (
                f"<details class='why'><summary>why</summary>{html.escape(why)}</details>" if why else "")
                + "</li>")
        self.md.append("")
        self.body.append(f"<h2>{html.escape(title)}</h2><ul>{''.join(inner)}</ul>")

    def figure(self, title: str, path: Path, *, open_: bool = False) -> None:
        self.md += [f"{'##' if open_ else '###'} {title}", "", f"![{title}](figures/{path.name})", ""]
        encoded = base64.b64encode(path.read_bytes()).decode()
        img = (f"<figure><img alt='{html.escape(title)}' src='data:image/png;base64,{encoded}'>"
               f"<figcaption>{html.escape(title)}</figcaption></figure>")
        self.body.append(f"<h2>{html.escape(title)}</h2>{img}" if open_ else
                         f"<details><summary>Figure: {html.escape(title)}</summary>{img}</details>")

    def footer(self, text: str) -> None:
        self.md += ["---", text, ""]
        self.body.append(f"<footer><hr><p>{html.escape(text)}</p></footer>")

    def markdown(self) -> str:
        return "\n".join(self.md)

    def html(self, title: str) -> str:
        return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
                f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>"
                f"<body>{''.join(self.body)}</body></html>\n")
