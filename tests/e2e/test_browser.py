"""The study's outputs in a real browser (Debian's chromium, headless): the report renders with
every image and no console error, its first screen answers "did it reproduce"; MLflow's UI
opens on the runs, shows the parent with its arms, and compares their params and metrics."""

import json
import re
import urllib.parse

import pytest
from browser import Chromium
from servers import MlflowServer

# one worker builds the shared study
pytestmark = [pytest.mark.slow, pytest.mark.system, pytest.mark.xdist_group("smoke_study")]
ARMS = ("baseline", "tuned", "prepared", "prepared_tuned")
LOADED = "[...document.images].every(i => i.complete)"


@pytest.fixture(scope="module")
def browser():
    with Chromium() as chromium:
        yield chromium


def test_the_report_renders_with_every_image_and_answers_on_its_first_screen(study, browser, tmp_path):
    report = study / "report" / "seed_case" / "report.html"
    page = browser.open(report.as_uri(), ready=LOADED, screenshot=tmp_path / "report.png",
                        width=1280, height=900, evaluate="""({
        images: [...document.images].map(i => [i.alt, i.complete, i.naturalWidth]),
        lead: document.querySelector('.lead').innerText,
        firstSection: document.querySelector('h2').innerText,
        scorecardTop: document.querySelector('table.scorecard').getBoundingClientRect().top,
        scorecardRows: document.querySelectorAll('table.scorecard tbody tr').length,
        results: [...document.querySelectorAll('table.scorecard td:first-child')].map(
            td => ['pass', 'fail', 'na', 'unsure'].filter(c => td.classList.contains(c)).join(' ')),
        height: window.innerHeight,
        details: document.querySelectorAll('details').length,
        open: document.querySelectorAll('details[open]').length,
        headline: document.querySelector('figure img').alt,
    })""")
    assert page["ready"] and page["errors"] == [], page["errors"]
    value = page["value"]
    card = json.loads((study / "report/seed_case/scorecard.json").read_text())
    assert all(ok and width > 0 for _, ok, width in value["images"]), value["images"]
    titles = [title for title, _, _ in value["images"]]
    assert {"Where a step's time goes, per arm", "Step time distribution: gap against compute",
            "Step time per step", "Published vs measured",
            *(f"Data queues: {arm}" for arm in ARMS)} <= set(titles), titles
    assert any(t.startswith("The verified candidates") for t in titles), titles
    assert "Each claim across the recorded runs on this machine kind" in titles
    assert len(titles) == len(set(titles))  # no figure drawn twice
    assert value["lead"] == card["headline"]
    assert value["firstSection"] == "Did the case study reproduce here?"
    assert value["scorecardTop"] < value["height"]  # the answer is on the first screen
    assert value["scorecardRows"] == len(card["claims"])
    assert value["results"] and set(value["results"]) <= {"pass", "fail", "na", "unsure"}  # unsure: inconclusive
    assert value["headline"].startswith("Where a step's time goes")
    assert value["details"] >= 10 and value["open"] == 0  # the detail waits below, collapsed
    assert page["screenshot"].read_bytes()[:4] == b"\x89PNG"


@pytest.fixture(scope="module")
def mlflow_ui(study, tmp_path_factory):
    folder = tmp_path_factory.mktemp("mlflow-ui")
    server = MlflowServer(f"sqlite:///{study}/mlflow/mlflow.db", folder / "artifacts",
                          folder / "server.log").start()
    yield server
    server.stop()


def _ids(study):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{study}/mlflow/mlflow.db")
    experiment = client.get_experiment_by_name("perfstudy/seed_case")
    runs = client.search_runs([experiment.experiment_id])
    arms = {r.data.tags["perfstudy.arm"]: r.info.run_id for r in runs
            if r.data.tags.get("perfstudy.role") == "arm"}
    return experiment.experiment_id, arms


def test_mlflow_ui_opens_on_the_runs_with_the_arms_under_their_parent(study, browser, mlflow_ui):
    experiment_id, _ = _ids(study)
    expand = ('[...document.querySelectorAll("[role=gridcell] button")]'
              '.find(b => !b.innerText.trim()).click()')
    page = browser.open(
        f"{mlflow_ui.uri}/#/experiments/{experiment_id}?workflowType=machine_learning",
        ready="/[1-9][0-9]* matching runs/.test(document.body.innerText)",
        steps=[(expand, f"{json.dumps(list(ARMS))}.every(a => document.body.innerText.includes(a))")],
        evaluate="({text: document.body.innerText, url: location.href})", width=1400, height=800)
    assert page["ready"], page["value"]["text"][-2000:]
    assert "/runs" in page["value"]["url"]  # the runs table, not the GenAI overview
    text = page["value"]["text"]
    assert f"{1 + len(ARMS)} matching runs" in text
    rows = text[text.index("seed_case\n", text.index("Run Name")):]
    assert all(arm in rows for arm in ARMS)
    assert not re.search(r"^[0-9.]+ms$", rows, re.M)  # each arm's run lasts its training


def test_mlflow_compare_shows_the_arms_params_and_metrics(study, browser, mlflow_ui):
    experiment_id, arms = _ids(study)
    query = urllib.parse.urlencode({"runs": json.dumps(list(arms.values())),
                                    "experiments": json.dumps([experiment_id])})
    page = browser.open(
        f"{mlflow_ui.uri}/#/compare-runs?{query}",
        ready='["Parameters", "Metrics", "diagnosis/gap_share"].every(t => document.body.innerText.includes(t))',
        evaluate="document.body.innerText", width=1400, height=900)
    assert page["ready"], page["value"][-2000:]
    text = page["value"]
    assert f"Comparing {len(ARMS)} Runs" in text
    table = text.index("Parameters\nShow diff only")  # the params table (not the plots' picker)
    params = text[table:text.index("Metrics\nShow diff only", table)]
    assert "pipeline.num_parallel_workers" in params and "data.prepared" in params
    assert all(arm in text for arm in ARMS)
    assert "advisor/predicted_step_ms" in text and "diagnosis/gap_share" in text

