"""make_report refuses to mix results of another config into a study's report."""

import shutil
import subprocess

import pandas as pd
import pytest
import yaml
from conftest import PYTHON, REPO
from omegaconf import OmegaConf
from records import make_diagnosis, make_summary

from perfstudy.common.config import config_hash
from perfstudy.common.io import read_json, write_json
from perfstudy.orchestrate.study import compose_arm
from perfstudy.orchestrate.workflow_config import Workflow

FIXTURES = REPO / "tests" / "fixtures" / "cpu_demo"


def runs_dir(tmp_path, overrides_by_arm):
    """The fixtures' results, as made by each arm's config of today (their recorded hash is
    set to it, so a new config field does not age them), with config.yaml composed with
    `overrides_by_arm` on top: a changed config."""
    workflow = yaml.safe_load((REPO / "workflow" / "config.yaml").read_text())
    for arm in ("baseline", "tuned"):
        run = tmp_path / "runs" / arm
        shutil.copytree(FIXTURES / arm, run)
        summary = read_json(run / "summary.json")
        summary["config_hash"] = config_hash(compose_arm(Workflow.of(workflow), "seed_case", arm))
        write_json(run / "summary.json", summary)
        cfg = compose_arm(Workflow.of({**workflow, "overrides": overrides_by_arm.get(arm, [])}), "seed_case", arm)
        OmegaConf.save(cfg, run / "config.yaml")
    return tmp_path / "runs"


def make_report(runs, out):
    return subprocess.run([PYTHON, str(REPO / "scripts" / "make_report.py"), "--study", "seed_case",
                           "--runs-dir", str(runs), "--out", str(out), "--arms", "baseline", "tuned"],
                          capture_output=True, text=True, timeout=300)


def test_results_of_the_arms_configs_make_a_report(tmp_path):
    result = make_report(runs_dir(tmp_path, {}), tmp_path / "report")
    assert result.returncode == 0, result.stderr[-2000:]
    text = (tmp_path / "report" / "report.md").read_text()
    assert "Diagnosis, side by side" in text
    assert text.startswith("# Study seed_case: ResNet50 input-pipeline tuning")


def test_the_title_names_the_models_the_study_trained():
    from types import SimpleNamespace

    from perfstudy.present.sentences import models

    mindcv = [SimpleNamespace(summary=make_summary({"factories": {"model_name": n}}))
              for n in ("mindcv_resnet50", "mindcv_mobilenet_v3_small")]
    assert models(mindcv) == "mindcv_mobilenet_v3_small and mindcv_resnet50"
    # the study's own model, and a factory without a model name
    assert models([SimpleNamespace(summary=make_summary({"factories": {"model_name": "resnet50"}})),
                    SimpleNamespace(summary=make_summary({"factories": {"model_name": None}}))]
                   ) == "ResNet50"


@pytest.mark.parametrize("arm", ["baseline", "tuned"])
def test_results_of_another_config_are_refused(tmp_path, arm):
    result = make_report(runs_dir(tmp_path, {arm: ["trainer.steps=31"]}), tmp_path / "report")
    assert result.returncode == 2
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith("error: ") and f"{arm}/summary.json was made with config" in message
    assert "--forcerun train" in message
    assert not (tmp_path / "report" / "report.html").exists()


@pytest.mark.parametrize(("factory", "words"), [
    ("perfstudy.run.pipeline.case_study", "decode less (data.prepared=true)"),
    ("perfstudy.run.mindcv_recipe.imagenet_recipe", "decode less (data.prepared=true)")])
def test_the_verdict_line_says_how_to_decode_less_for_the_pipeline_it_is(factory, words):
    # data.prepared serves any pipeline: a MindRecord for the case study's, an ImageFolder copy
    # handed to a user's factory as its root
    from perfstudy.decide.arms import Arm
    from perfstudy.present.sentences import verdict_line

    rec = {"action": "none", "culprit_label": "Map #2 [RandomCropDecodeResize, RandAugment]",
           "culprit_kind": "decode", "verified": True, "remedies": [], "prepared_prediction": None}
    arm = Arm("mindcv_resnet50", make_summary({"factories": {"pipeline": factory}, "steady_step_ms": 2013.0}),
              pd.DataFrame(), make_diagnosis(bound="cpu", recommendation=rec, advisor=None))
    line = verdict_line(arm, None)
    assert f"do: keep the settings (measured); {words}" in line
    assert line.startswith("mindcv_resnet50: cpu-bound; culprit Map #2 [RandomCropDecodeResize, …]")


def test_the_setup_table_names_the_accelerator_environment_json_recorded():
    """The report's Setup row says the device a run trained on: its target, and on an
    accelerator the model environment.json recorded (on the CPU: the target alone)."""
    from perfstudy.decide.arms import Arm
    from perfstudy.present.tables import setup_table

    cpu = make_summary()
    gpu = make_summary({"device_target": "GPU",
                        "environment": {**cpu.environment,
                                        "device": {"target": "GPU", "model": "NVIDIA H100 80GB HBM3"}}})
    table = setup_table([Arm("cpu", cpu, pd.DataFrame(), None), Arm("gpu", gpu, pd.DataFrame(), None)])
    assert list(table["device"]) == ["CPU (graph mode)", "GPU NVIDIA H100 80GB HBM3 (graph mode)"]
