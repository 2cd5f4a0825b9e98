"""The Snakemake workflow: lint, a full dry run, and its errors for bad settings."""

import subprocess
from pathlib import Path

import pytest
from conftest import PYTHON, REPO, RUFF, SNAKEMAKE, env_without_mlflow

from perfstudy.orchestrate.workflow_config import Workflow


def snakemake(*args, workdir, timeout=300):
    """Run the project's Snakefile with its working directory (and lock) in workdir."""
    return subprocess.run([SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(workdir), *args],
                          cwd=workdir, capture_output=True, text=True, timeout=timeout,
                          env=env_without_mlflow())


def test_lint_is_clean(tmp_path):
    result = snakemake("--lint", "--config", f"results={tmp_path}/results", workdir=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Lints for" not in result.stdout + result.stderr


def test_python_code_is_ruff_clean():
    result = subprocess.run([RUFF, "check", "src", "scripts", "tests"], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout


def test_dry_run_plans_the_whole_study(tmp_path):
    result = snakemake("-n", "--cores", "2", workdir=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout + result.stderr
    for rule, count in (("compose_config", 4), ("make_dataset", 1), ("prepare_dataset", 1),
                        ("train", 4), ("track_init", 1), ("track_arm", 4), ("make_report", 1),
                        ("track_study", 1)):
        assert any(line.split() == [rule, str(count)] for line in out.splitlines()), rule


@pytest.mark.parametrize("study, operator", [("own_training", "generator_1"), ("own_pipeline", "map_1")])
def test_a_studys_own_code_is_on_the_trainings_pythonpath(tmp_path, study, operator):
    """`code:` of a study (the user's factories' folder) is put first on PYTHONPATH of its
    trainings: the own_training (own_pipeline) study names own_training.make_dataset
    (own_pipeline.make_dataset) from docs/examples."""
    result = snakemake("-n", "-p", "--cores", "2", "--config", f"study={study}",
                       f"results={tmp_path}/results", workdir=tmp_path)
    assert result.returncode == 0, result.stderr
    trains = [line for line in result.stdout.splitlines() if "scripts/train.py" in line]
    assert len(trains) == 2  # the diagnosed operator and its sweep
    composes = [line for line in result.stdout.splitlines() if "scripts/compose_config.py" in line]
    assert len(composes) == 2
    assert all(f"pipeline._target_={study}.make_dataset" in line for line in composes)
    assert all(f"scenario.key=pipeline.workers.{operator}" in line for line in composes)
    assert all(f"env PYTHONPATH={REPO / 'docs' / 'examples'}" in line for line in trains)


def test_a_bare_snakemake_uses_make_runs_profile_and_track_init_runs_before_the_trainings(tmp_path):
    makefile = (REPO / "Makefile").read_text()
    run = makefile[makefile.index("\nrun: "):makefile.index("\nrerun: ")]
    assert "--workflow-profile profiles/default" in run
    # no profile named: Snakemake loads profiles/default beside the Snakefile, as make run does
    result = snakemake("-n", "--cores", "2", workdir=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"Using workflow specific profile {REPO / 'profiles' / 'default'}" in result.stdout + result.stderr
    rules = (REPO / "workflow/rules/track.smk").read_text()
    init = rules[rules.index("rule track_init"):rules.index("rule track_arm")]
    assert "priority: 50" in init  # before any training: each opens its arm's live run under it


def test_make_clean_purges_the_stores_deleted_runs_and_keeps_the_rest(tmp_path):
    from mlflow.entities import ViewType
    from mlflow.tracking import MlflowClient

    db = tmp_path / "results" / "mlflow" / "mlflow.db"
    db.parent.mkdir(parents=True)
    client = MlflowClient(f"sqlite:///{db}")
    experiment = client.create_experiment("perfstudy/s")
    kept, replaced = (client.create_run(experiment).info.run_id for _ in range(2))
    client.delete_run(replaced)  # as tracking.log_arm does with an arm's retrained run
    (tmp_path / "results" / "runs").mkdir()
    result = subprocess.run(["make", "-f", str(REPO / "Makefile"), "clean", f"BIN={Path(PYTHON).parent}"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env_without_mlflow())
    assert result.returncode == 0, result.stderr[-2000:]
    assert not (tmp_path / "results" / "runs").exists() and db.is_file()
    assert [r.info.run_id for r in client.search_runs([experiment], run_view_type=ViewType.ALL)] == [kept]


def test_arms_selects_some_arms_of_the_study(tmp_path):
    result = snakemake("-n", "--cores", "2", "--config", "overrides=[size=smoke]",
                       "arms=[baseline,tuned]", workdir=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout + result.stderr
    assert any(line.split() == ["train", "2"] for line in out.splitlines())
    assert "prepare_dataset" not in out
    bad = snakemake("-n", "--cores", "2", "--config", "arms=[basline]", workdir=tmp_path)
    assert bad.returncode != 0
    assert "Arm 'basline' is not an arm of study 'seed_case'" in bad.stdout + bad.stderr


def test_global_overrides_reach_every_arm(tmp_path):
    result = snakemake("-n", "--cores", "2", "--config", "overrides=[size=smoke]",
                       workdir=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "photos_smoke/manifest.json" in result.stdout + result.stderr


@pytest.mark.parametrize("setting, fragment", [
    ("study=nonesuch", "Unknown study 'nonesuch'"),
    ("overrides=[trainer.stepz=3]", "Unknown config key"),
    ("overrides=[pipeline.num_parallel_workers=0]", "num_parallel_workers"),
    ("overrides=[notanoverride]", "notanoverride"),
    ("studyy=seed_case", "'studyy' was unexpected"),
    ("results=/proc/perfstudy-results", "The output folder /proc/perfstudy-results cannot be written"),
])
def test_bad_settings_fail_before_anything_runs(tmp_path, setting, fragment):
    result = snakemake("-n", "--cores", "2", "--config", setting, workdir=tmp_path)
    assert result.returncode != 0
    assert fragment in result.stdout + result.stderr
    assert not (tmp_path / "results").exists()


def test_train_script_by_hand_reports_a_bad_key_in_one_line():
    result = subprocess.run([str(REPO / ".venv/bin/python") if (REPO / ".venv").exists()
                             else "python", str(REPO / "scripts/train.py"), "trainer.stepz=3"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert result.stderr.startswith("error: Unknown config key")


def test_train_script_is_a_hydra_app_that_prints_its_config_and_help(tmp_path):
    import yaml

    job = subprocess.run([PYTHON, str(REPO / "scripts/train.py"), "size=smoke", "experiment=tuned",
                          f"paths.results={tmp_path}", "--cfg", "job"],
                         capture_output=True, text=True, timeout=120)
    assert job.returncode == 0, job.stderr[-2000:]
    shown = yaml.safe_load(job.stdout)
    assert shown["pipeline"]["num_parallel_workers"] == 12 and shown["size"] == "smoke"
    assert shown["trainer"]["mode"] == "graph"  # an Enum field, shown as its value
    assert not (tmp_path / "runs").exists()  # nothing run
    shown_help = subprocess.run([PYTHON, str(REPO / "scripts/train.py"), "--help"],
                                capture_output=True, text=True, timeout=120)
    assert shown_help.returncode == 0
    assert "== Configuration groups ==" in shown_help.stdout
    assert "profiler: full, light, off" in shown_help.stdout


def test_operator_addresses_are_taken_as_written_by_the_train_script(tmp_path):
    """docs/bring-your-own.md's command: pipeline.workers.<address> and .processes.<address>
    without Hydra's `+` (the DAG's compose takes them so too)."""
    import yaml

    job = subprocess.run([PYTHON, str(REPO / "scripts/train.py"), "size=smoke", f"paths.results={tmp_path}",
                          "pipeline.workers.generator_1=2", "pipeline.processes.generator_1=false",
                          "--cfg", "job"], capture_output=True, text=True, timeout=120)
    assert job.returncode == 0, job.stderr[-2000:]
    shown = yaml.safe_load(job.stdout)
    assert shown["pipeline"]["workers"] == {"generator_1": 2}
    assert shown["pipeline"]["processes"] == {"generator_1": False}


@pytest.mark.parametrize("override, said", [
    ("trainer.mode=eager",
     "Bad value for config key 'trainer.mode': Invalid value 'eager', expected one of [graph, pynative]"),
    ("profiler.placement=before", "Bad value for config key 'profiler.placement'"),
    ("model=resnet5", "Unknown option 'resnet5' for config group 'model'; use one of"),
])
def test_train_script_refuses_a_bad_choice_in_one_sentence(override, said):
    result = subprocess.run([PYTHON, str(REPO / "scripts/train.py"), override],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and said in result.stderr


def test_a_device_this_mindspore_cannot_use_is_one_sentence(tmp_path):
    result = subprocess.run([PYTHON, str(REPO / "scripts/train.py"), "size=smoke",
                             "device=ascend", f"paths.results={tmp_path}"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: device=ascend (Ascend) is not usable") and "use device=cpu" in last
    assert not (tmp_path / "data").exists()  # failed before generating anything


def test_a_results_path_under_a_file_is_one_sentence(tmp_path):
    (tmp_path / "afile").write_text("x")
    result = snakemake("-n", "--cores", "2", "--config", f"results={tmp_path}/afile/results",
                       workdir=tmp_path)
    assert result.returncode != 0
    assert f"{tmp_path}/afile is a file; set results to a folder you can write" in result.stdout + result.stderr


def test_train_by_hand_into_an_unwritable_folder_is_one_sentence():
    result = subprocess.run([PYTHON, str(REPO / "scripts/train.py"), "size=smoke",
                             "paths.results=/proc/perfstudy-results"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: The output folder /proc/perfstudy-results/runs/adhoc/adhoc cannot be written")
    assert "paths.results=/tmp/perfstudy-results" in last


def test_the_sweep_study_fans_out_one_arm_per_worker_count(tmp_path):
    from perfstudy.common.provenance import cpu_count

    result = snakemake("-n", "--cores", "2", "--config", "study=sweep", workdir=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout + result.stderr
    assert any(line.split() == ["train", str(2 + cpu_count())] for line in out.splitlines())  # + baseline, autotune
    assert "runs/sweep/workers_1/steps.csv" in out and "runs/sweep/autotune/steps.csv" in out


def test_a_nested_true_given_on_the_command_line_is_a_boolean(tmp_path):
    # Snakemake's --config leaves `true` inside a mapping a string; the schema wants a boolean
    result = snakemake("-n", "--cores", "2", "--config", "study=scenarios",
                       "studies={scenarios: {autotune: true, select: [python_loop]}}", workdir=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "runs/scenarios/python_loop_autotune/steps.csv" in result.stdout + result.stderr


def test_sweep_arms_are_the_sweeps_overrides_plus_the_value():
    from perfstudy.common.config import ConfigError
    from perfstudy.orchestrate.study import arm_overrides, arm_table

    wf = {"study": "s", "results": "r", "overrides": ["size=smoke"], "studies": {"s": {
        "arms": {"baseline": ["experiment=baseline"]},
        "sweep": {"name": "w", "key": "pipeline.num_parallel_workers", "values": [1, 4, 16],
                  "overrides": ["experiment=tuned"]}}}}
    assert list(arm_table(Workflow.of(wf))) == ["baseline", "w_1", "w_4", "w_16"]
    assert arm_overrides(Workflow.of(wf), "s", "w_4")[:3] == ["experiment=tuned", "pipeline.num_parallel_workers=4",
                                                 "size=smoke"]
    wf["studies"]["s"]["arms"]["w_4"] = ["experiment=tuned"]
    with pytest.raises(ConfigError, match="also written under `arms:`"):
        arm_table(Workflow.of(wf))


def test_a_studys_overrides_reach_its_arms_and_the_workflows_win():
    import yaml

    from perfstudy.orchestrate.study import compose_arm

    wf = {"study": "s", "results": "r", "overrides": ["size=smoke"], "studies": {
        "s": {"arms": {"a": ["experiment=baseline"]}, "overrides": ["verify.budget_base_min_s=300"]},
        "t": {"arms": {"a": ["experiment=baseline"]}}}}
    assert compose_arm(Workflow.of(wf), "s", "a").verify.budget_base_min_s == 300
    assert compose_arm(Workflow.of(wf), "t", "a").verify.budget_base_min_s == 0
    wf["overrides"] = ["size=smoke", "verify.budget_base_min_s=60"]
    assert compose_arm(Workflow.of(wf), "s", "a").verify.budget_base_min_s == 60
    shipped = yaml.safe_load((REPO / "workflow" / "config.yaml").read_text())  # the benchmark's floor
    shipped.update(study="scenarios", overrides=["size=smoke"])
    assert compose_arm(Workflow.of(shipped), "scenarios", "mixed_cost").verify.budget_base_min_s == 300
    assert compose_arm(Workflow.of(shipped), "seed_case", "baseline").verify.budget_base_min_s == 0


def test_the_prepared_arms_floor_is_for_its_rounds_against_the_source_alone():
    """The seed case's prepared arm: its rounds against the source get at least 120 s, its own
    verification (1 against 2 workers) the budget of its training (with one floor for both it
    ran 12 rounds, 7 past its budget)."""
    import yaml

    from perfstudy.orchestrate.study import compose_arm
    from perfstudy.run.remedy_rounds import budget_floor_s
    from perfstudy.run.verify import budget

    shipped = yaml.safe_load((REPO / "workflow" / "config.yaml").read_text())
    shipped.update(overrides=["size=smoke"])
    ver = compose_arm(Workflow.of(shipped), "seed_case", "prepared").verify
    assert (ver.budget_base_min_s, budget_floor_s(ver)) == (0, 120)
    assert budget(ver.budget_share, 40.0, ver.budget_base_min_s) == 40.0  # the verification's
    assert budget(ver.budget_share, 40.0, budget_floor_s(ver)) == 120.0  # the remedy's rounds
    both = compose_arm(Workflow.of({**shipped, "overrides": ["size=smoke", "verify.budget_base_min_s=300"]}),
                       "seed_case", "tuned").verify
    assert budget_floor_s(both) == 300  # unset: the verification's floor


def test_the_scenarios_study_plans_each_diagnosed_run_and_its_sweep(tmp_path):
    result = snakemake("-n", "--cores", "2", "--config", "study=scenarios", "overrides=[size=smoke]",
                       workdir=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout + result.stderr
    # 12 diagnosed runs; one sweep run for 11 scenarios (decode_cpus reuses decode_1's), each
    # measuring all its settings in interleaved rounds
    assert any(line.split() == ["train", str(12 + 11)] for line in out.splitlines()), out[-2000:]
    for run in ("python_cpu", "python_cpu_sweep", "slow_reader_sweep", "decode_cpus", "batch_transform_sweep",
                "pillow_filter", "mixed_cost_sweep", "numpy_fft_sweep", "python_loop", "batch_loop_sweep"):
        assert f"runs/scenarios/{run}/steps.csv" in out


def test_scenario_arms_carry_their_role_truth_and_key():
    from perfstudy.common.config import ConfigError
    from perfstudy.orchestrate.study import arm_table, compose_arm

    wf = {"study": "b", "results": "r", "overrides": ["size=smoke"], "studies": {"b": {"scenarios": {
        "slow": {"arm": ["experiment=slow_reader"], "key": "pipeline.reader_workers", "values": [1, 2]},
        "same": {"arm": ["experiment=slow_reader", "pipeline.reader_workers=2"], "truth": "slow"}}}}}
    assert list(arm_table(Workflow.of(wf))) == ["slow", "slow_sweep", "same"]
    cfg = compose_arm(Workflow.of(wf), "b", "slow_sweep")
    assert (cfg.scenario.role, cfg.scenario.truth) == ("truth", "slow")
    assert (cfg.sweep.key, list(cfg.sweep.workers), cfg.sweep.processes) == ("pipeline.reader_workers", [1, 2], False)
    assert cfg.profiler.name == "off" and cfg.pipeline.reader_delay_ms == 40 and cfg.verify.candidates == 0
    same = compose_arm(Workflow.of(wf), "b", "same")
    assert (same.scenario.role, same.scenario.truth, same.scenario.key) == \
        ("diagnosed", "slow", "pipeline.reader_workers")
    wf["studies"]["b"]["autotune"] = True  # each scenario also run by MindSpore's AutoTune
    assert list(arm_table(Workflow.of(wf))) == ["slow", "slow_autotune", "slow_sweep", "same"]
    tuned = compose_arm(Workflow.of(wf), "b", "slow_autotune")
    assert tuned.pipeline.autotune and tuned.scenario.role == "peer" and tuned.profiler.name == "off"
    wf["studies"]["b"]["select"] = ["same"]
    with pytest.raises(ConfigError, match="needs scenario 'slow'"):
        arm_table(Workflow.of(wf))


def test_the_mindcv_study_sweeps_the_recipes_image_map_by_address():
    import yaml

    from perfstudy.orchestrate.study import arm_table, compose_arm

    wf = yaml.safe_load((REPO / "workflow" / "config.yaml").read_text())
    wf.update(study="mindcv", overrides=["size=smoke"])
    arms = list(arm_table(Workflow.of(wf)))
    assert {"mindcv_resnet50", "mindcv_mobilenet", "mindcv_resnet50_sweep",
            "mindcv_mobilenet_sweep"} <= set(arms)
    swept = compose_arm(Workflow.of(wf), "mindcv", "mindcv_mobilenet_sweep")
    assert swept.pipeline._target_ == "perfstudy.run.mindcv_recipe.imagenet_recipe"
    assert (swept.sweep.key, swept.sweep.processes) == ("pipeline.workers.map_2", True)
    assert swept.model.args["model_name"] == "mobilenet_v3_small_100"
    diagnosed = compose_arm(Workflow.of(wf), "mindcv", "mindcv_resnet50")
    assert diagnosed.scenario.key == "pipeline.workers.map_2" and not diagnosed.pipeline.workers
    # the whole recipe: its mixup map, its loss and its optimizer
    assert diagnosed.pipeline.args["mixup"] > 0 and diagnosed.pipeline.args["cutmix"] > 0
    assert diagnosed.loss._target_ == "mindcv.loss.create_loss"
    assert diagnosed.loss.args["label_smoothing"] == 0.1
    assert (diagnosed.optimizer._target_, diagnosed.optimizer.args["opt"]) == (
        "mindcv.optim.create_optimizer", "adamw")
    # the decode remedy on the user's pipeline: an ImageFolder copy handed to the recipe
    prepared = compose_arm(Workflow.of(wf), "mindcv", "mindcv_resnet50_prepared")
    assert prepared.data.prepared and prepared.pipeline._target_ == diagnosed.pipeline._target_
    from perfstudy.data.prepare import Settings
    assert Settings.from_config(prepared).format == "imagefolder"


def test_a_cluster_executor_refuses_a_sqlite_tracking_store_up_front(tmp_path):
    """SLURM's executor (the plugin is pinned) would run jobs on other nodes: the SQLite file is
    refused before any job is submitted, with the fix (a tracking server)."""
    result = snakemake("--executor", "slurm", "--jobs", "2", "--cores", "2", "--config",
                       "overrides=[size=smoke]", f"results={tmp_path}/results", workdir=tmp_path)
    out = result.stdout + result.stderr
    assert result.returncode != 0
    assert "The tracking store is the SQLite file" in out and "MLFLOW_TRACKING_URI=http://" in out
    assert not (tmp_path / "results" / "runs").exists()  # nothing ran


def test_repeats_train_in_rounds_each_run_after_the_one_before(tmp_path):
    """With repeats=2 the DAG chains the train jobs in run_order (a seeded random order per
    round): each train job has the one before it as an input, so no two rounds mix."""
    import re

    from perfstudy.orchestrate.study import run_order

    result = snakemake("-n", "--cores", "2", "--config", "repeats=2", "overrides=[size=smoke]",
                       "arms=[baseline,tuned]", workdir=tmp_path)
    assert result.returncode == 0, result.stderr
    after = {}
    for block in result.stdout.split("rule train:")[1:]:
        inputs = block.split("input:", 1)[1].split("\n", 1)[0]
        run = re.search(r"runs/seed_case/([\w.]+)/config.yaml", inputs).group(1)
        before = re.search(r"runs/seed_case/([\w.]+)/summary.json", inputs)
        after[run] = before.group(1) if before else None
    wf = {"study": "seed_case", "repeats": 2, "arms": ["baseline", "tuned"],
          "studies": {"seed_case": {"arms": {"baseline": [], "tuned": []}}}}
    order = run_order(Workflow.of(wf), "seed_case")
    assert after == dict(zip(order, [None, *order[:-1]], strict=True))


def test_the_tuned_arm_trains_after_the_baseline_whose_settled_pairs_it_reuses(tmp_path):
    """verify.reuse_from=[baseline] (the shipped seed case): the tuned arm's train job has the
    baseline's summary as data (trained again when it is) and its config names it in
    paths.reused; an arm listed after it, or none of the study's, is one sentence."""
    import yaml

    from perfstudy.common.config import ConfigError
    from perfstudy.orchestrate.study import compose_arm

    result = snakemake("-n", "--cores", "2", "--config", "overrides=[size=smoke]", workdir=tmp_path)
    assert result.returncode == 0, result.stderr
    inputs = {}
    for block in result.stdout.split("rule train:")[1:]:
        line = block.split("input:", 1)[1].split("\n", 1)[0]
        inputs[line.split("runs/seed_case/", 1)[1].split("/", 1)[0]] = line
    assert "runs/seed_case/baseline/summary.json" in inputs["tuned"]
    assert "runs/seed_case/prepared/summary.json" in inputs["prepared_tuned"]
    assert "summary.json" not in inputs["baseline"] + inputs["prepared"]

    shipped = yaml.safe_load((REPO / "workflow" / "config.yaml").read_text())
    tuned = compose_arm(Workflow.of({**shipped, "overrides": ["size=smoke"]}), "seed_case", "tuned")
    assert list(tuned.paths.reused) == [f"{shipped['results']}/runs/seed_case/baseline/summary.json"]
    alone = compose_arm(Workflow.of({**shipped, "overrides": ["size=smoke"], "arms": ["tuned"]}),
                        "seed_case", "tuned")
    assert list(alone.paths.reused) == []  # the baseline is not run: its pair is measured here
    unverified = compose_arm(Workflow.of({**shipped, "overrides": ["size=smoke", "verify.candidates=0"]}),
                             "seed_case", "tuned")
    assert list(unverified.paths.reused) == []  # no rounds, nothing to wait for
    for bad in ("verify.reuse_from=[tuned]", "verify.reuse_from=[nosuch]"):
        with pytest.raises(ConfigError, match=r"verify.reuse_from of arm 'baseline' names '\w+', which is "
                           r"not an arm of study 'seed_case' listed before it; .*leave verify.reuse_from empty\."):
            flow = Workflow.of({**shipped, "overrides": ["size=smoke"]})
            flow.studies["seed_case"].arms["baseline"].append(bad)
            compose_arm(flow, "seed_case", "baseline")


@pytest.mark.parametrize("device, asked", [("gpu", " --gpus=1"), ("ascend", " --gres=npu:1"),
                                           ("cpu", "")])
def test_under_slurm_the_train_rule_asks_for_the_devices_accelerator(tmp_path, device, asked):
    """The device group's request reaches SLURM: the dry run's train job carries it as the
    executor's resources, which its plugin turns into sbatch's --gpus / --gres. A GPU study is
    planned from a login node without a GPU: the device is the cluster nodes' to have."""
    import re
    from types import SimpleNamespace

    from snakemake_executor_plugin_slurm.utils import set_gres_string

    result = snakemake("-n", "--executor", "slurm", "--jobs", "2", "--cores", "2", "--config",
                       f"overrides=[size=smoke,device={device}]", "arms=[baseline]",
                       f"results={tmp_path}/results", workdir=tmp_path)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    block = result.stdout.split("rule train:", 1)[1]
    line = re.search(r"resources: (.*)", block).group(1)
    resources = dict(item.split("=", 1) for item in line.split(", "))
    job = SimpleNamespace(resources={k: int(v) if v.isdigit() else v for k, v in resources.items()
                                     if k in ("gpu", "gpu_model", "gres")})
    job.resources = SimpleNamespace(**job.resources, get=job.resources.get)
    assert set_gres_string(job) == asked
    assert not (tmp_path / "results" / "runs").exists()


def test_a_device_this_machine_lacks_stops_the_study_before_any_data(tmp_path):
    """device=gpu on a CPU-only MindSpore: `snakemake --cores` (local jobs) refuses in one
    sentence when it starts, before the data is generated."""
    from perfstudy.common import device

    if device.available("GPU"):
        pytest.skip("this MindSpore has a GPU build")
    result = snakemake("--cores", "2", "--config", "overrides=[size=smoke,device=gpu]",
                       "arms=[baseline]", f"results={tmp_path}/results", workdir=tmp_path)
    out = result.stdout + result.stderr
    assert result.returncode != 0
    assert ("Study 'seed_case', arm 'baseline': device=gpu trains on GPU, which this MindSpore "
            "install cannot run") in out and "add device=cpu to the overrides" in out
    assert not (tmp_path / "results" / "data").exists()


def test_the_device_check_script_plans_the_study_and_refuses_a_device_it_lacks(tmp_path):
    """scripts/device_check.sh: the seed case at 224 px on the device, the map at 1, 8, 12 and
    16 workers, results and MLflow store under one folder. Planned here (DRY_RUN, device=cpu);
    device=gpu on a CPU-only MindSpore stops in one sentence before any data; a device that is
    none of the group's is refused by the script itself."""
    from perfstudy.common import device

    script = str(REPO / "scripts" / "device_check.sh")
    env = {**env_without_mlflow(), "DRY_RUN": "1"}
    plan = subprocess.run([script, "cpu", str(tmp_path / "plan")], capture_output=True,
                          text=True, timeout=300, env=env)
    assert plan.returncode == 0, plan.stderr[-2000:]
    assert "This was a dry-run" in plan.stdout
    for arm in ("baseline", "workers_8", "tuned", "workers_16"):
        assert f"{tmp_path}/plan/results/runs/device_check/{arm}/summary.json" in plan.stdout
    assert "photos_imagenet_size" in plan.stdout  # the paper size's data
    if not device.available("GPU"):
        run = subprocess.run([script, "gpu", str(tmp_path / "gpu")], capture_output=True,
                             text=True, timeout=300, env=env_without_mlflow())
        assert run.returncode != 0
        assert "Study 'device_check', arm 'baseline': device=gpu trains on GPU" in run.stdout + run.stderr
        assert not (tmp_path / "gpu" / "results" / "data").exists()
    wrong = subprocess.run([script, "tpu"], capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 2 and wrong.stderr.startswith("error: device 'tpu' is not one of")
