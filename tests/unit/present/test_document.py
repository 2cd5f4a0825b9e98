"""The report's document: two jinja2 templates over one list of blocks, tables from pandas."""

import pandas as pd

from perfstudy.present.document import Document


def _doc(tmp_path):
    figure = tmp_path / "f.png"
    figure.write_bytes(b"\x89PNG fake")
    doc = Document("Study <s>")
    doc.lead("All 2 claims hold & more")
    doc.section("The claims", pd.DataFrame({"result": ["holds", "does not hold"], "claim": ["a<b", "c"]}),
                note="a note", css="scorecard")
    doc.verdicts("Verdicts", [("baseline: input-bound", "gap 60 %"), ("tuned: compute-bound", None)])
    doc.heading("Details")
    doc.section("Lines", ["one <b>", "two"], collapsed=True)
    doc.figure("Step time", figure)
    doc.footer("Provenance: x")
    return doc


def test_the_html_escapes_text_and_classes_each_result_cell(tmp_path):
    page = _doc(tmp_path).html("Study <s>")
    assert page.startswith("<!doctype html>") and page.count("<h1>") == 1
    assert "<title>Study &lt;s&gt;</title>" in page and "<b>" not in page.replace("<body>", "")
    assert 'class="scorecard"' in page and "a&lt;b" in page
    assert "pass" in page.split("holds</td>")[0].rsplit("<td", 1)[1]  # the result cell's colour
    assert "fail" in page.split("does not hold</td>")[0].rsplit("<td", 1)[1]
    assert "<details><summary>Lines</summary>" in page and "<li>one &lt;b&gt;</li>" in page
    assert '<details class="why"><summary>why</summary>gap 60 %</details>' in page
    assert "data:image/png;base64," in page and "<footer><hr><p>Provenance: x</p></footer>" in page
    assert _doc(tmp_path).html("Study <s>") == page  # reproducible: no random ids


def test_the_markdown_has_the_same_blocks_in_order(tmp_path):
    md = _doc(tmp_path).markdown()
    lines = md.splitlines()
    assert lines[0] == "# Study <s>" and lines[2] == "**All 2 claims hold & more**"
    assert "_a note_" in md and "| holds | a<b |" in md and "| :--" in md
    assert "- baseline: input-bound\n  - why: gap 60 %\n- tuned: compute-bound" in md
    assert md.index("## Verdicts") < md.index("## Details") < md.index("### Lines")
    assert "![Step time](figures/f.png)" in md and md.rstrip().endswith("Provenance: x")
