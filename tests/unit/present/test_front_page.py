"""README's measured section is written from a run's results and checked against its record."""

import re
import shutil
import subprocess
from types import SimpleNamespace

import pytest
from conftest import PYTHON, REPO
from records import render_report

from perfstudy.decide import claims
from perfstudy.decide.arms import load_arm
from perfstudy.present import front_page


@pytest.fixture(scope="module")
def results(analysed, tmp_path_factory):
    """The analysed cpu_demo runs laid out as a study's results, with its report made."""
    out = tmp_path_factory.mktemp("results")
    runs = out / "runs" / "seed_case"
    for arm in ("baseline", "tuned"):
        shutil.copytree(analysed / arm, runs / arm)
    arms = [load_arm(runs / arm, arm) for arm in ("baseline", "tuned")]
    render_report("seed_case", arms, out / "report" / "seed_case",
                  claims.load(REPO / "workflow" / "claims" / "seed_case.yaml"))
    return out


def test_the_section_says_what_the_run_measured_and_where(results):
    page = front_page.from_results(results, "seed_case")
    card = (results / "report" / "seed_case" / "scorecard.json").read_text()
    assert page.headline and page.headline in card
    assert page.commit.startswith("d1c746bd7b") and page.date.startswith("2026-")
    assert page.host.endswith("2 CPUs") and page.mindspore == "2.10.0" and page.size == "cpu_demo"
    # each arm's training (these runs of 2026-11-29 ran no rounds: nothing added)
    assert re.fullmatch(r"baseline \d+:\d\d, tuned \d+:\d\d", page.trainings)
    assert [a.arm for a in page.arms] == ["published baseline", "published tuned", "baseline", "tuned"]
    assert page.arms[1].workers == "12" and page.arms[3].workers == "12 → 2"
    assert len(page.claims) == 10 and {c.result for c in page.claims} <= {
        "holds", "does not hold", "inconclusive", "not scored"}
    text = front_page.render(page)
    assert text.startswith(front_page.BEGIN) and text.endswith(front_page.END)
    assert f"commit `{page.commit}`, {page.date}" in text and f"> **{page.headline}**" in text
    assert "| published tuned | 12 | 0.25 ms | 18.1 ms | 1.4 % | 4.98x |" in text
    assert all(f"- {arm}: " in text for arm in ("baseline", "tuned"))


def test_the_block_is_replaced_between_its_markers_and_read_back(results, tmp_path):
    page = front_page.from_results(results, "seed_case")
    readme = f"# x\n\n{front_page.BEGIN}\nold numbers, by hand\n{front_page.END}\n\n## next\n"
    new = front_page.replace_block(readme, front_page.render(page))
    assert "by hand" not in new and new.startswith("# x\n\n") and new.endswith("\n\n## next\n")
    assert front_page.block_of(new) == front_page.render(page)
    front_page.write(page, tmp_path)
    assert front_page.read(tmp_path) == page
    with pytest.raises(ValueError, match="no measured section"):
        front_page.replace_block("# no markers\n", "x")


def test_readme_says_what_its_record_holds():
    """README's section was written by scripts/front_page.py from a run, not typed."""
    done = subprocess.run([PYTHON, str(REPO / "scripts" / "front_page.py"), "--check"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    page = front_page.read(REPO)
    assert page.commit and page.date and page.headline


def test_an_arms_rounds_are_said_apart_from_its_training():
    """The rounds after a training (its verification, a prepared arm's against its source)
    cost 1-3x the training: the front page adds them, never folds them in."""
    rounds = SimpleNamespace(wall_s=292.0)
    both = SimpleNamespace(verification=SimpleNamespace(rounds=rounds),
                           against_source=SimpleNamespace(rounds=SimpleNamespace(wall_s=60.0)))
    assert front_page._rounds_wall(both) == " + 5:52"
    assert front_page._rounds_wall(SimpleNamespace(verification=None, against_source=None)) == ""
