"""Every experiment and size composes; bad keys, types and values fail with one sentence."""

import pytest
from omegaconf import OmegaConf

from perfstudy.common.config import (
    CONF_DIR,
    ConfigError,
    compose_run_config,
    config_hash,
    flatten,
    load_run_config,
    to_container,
)

EXPERIMENTS = sorted(p.stem for p in (CONF_DIR / "experiment").glob("*.yaml"))
SIZES = sorted(p.stem for p in (CONF_DIR / "size").glob("*.yaml"))


def test_the_contracted_sizes_and_experiments_exist():
    assert {"smoke", "cpu_demo", "paper"} <= set(SIZES)
    assert {"baseline", "tuned"} <= set(EXPERIMENTS)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_experiment_and_size_composes(experiment, size):
    cfg = compose_run_config([f"experiment={experiment}", f"size={size}"])
    assert cfg.size == size
    assert cfg.arm == experiment
    assert cfg.model.num_classes >= cfg.data.num_classes


def test_default_is_cpu_demo_and_the_article_arms_differ_only_in_workers():
    base = compose_run_config(["experiment=baseline"])
    tuned = compose_run_config(["experiment=tuned"])
    assert base.size == "cpu_demo"
    assert base.pipeline.num_parallel_workers is None
    assert tuned.pipeline.num_parallel_workers == 12
    flat_base, flat_tuned = flatten(to_container(base)), flatten(to_container(tuned))
    diff = {k for k, v in flat_base.items() if flat_tuned.get(k) != v}
    assert diff == {"arm", "run", "paths.run_dir", "pipeline.num_parallel_workers"}


def test_paper_size_is_the_articles_setting():
    cfg = compose_run_config(["size=paper"])
    assert (cfg.pipeline.image_size, cfg.pipeline.batch_size) == (224, 32)
    assert cfg.device.target == "CPU"  # the size no longer picks a device: the device group does


@pytest.mark.parametrize("override, fragment", [
    ("trainer.stepz=3", "Unknown config key"),
    ("+trainer.stepz=3", "Unknown config key"),
    ("trainer.steps=many", "trainer.steps"),
    ("pipeline.num_parallel_workers=0", "num_parallel_workers"),
    ("pipeline.num_parallel_workers=-2", "num_parallel_workers"),
    ("pipeline.batch_size=0", "pipeline.batch_size"),
    ("trainer.mode=eager", "trainer.mode"),
    ("experiment=nonesuch", "nonesuch"),
    ("trainer.steps=3", "trainer.steps"),
])
def test_bad_config_is_one_clear_sentence(override, fragment):
    with pytest.raises(ConfigError) as info:
        compose_run_config([override])
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message


def test_config_hash_ignores_where_outputs_go_but_not_what_is_computed():
    a = compose_run_config(["experiment=tuned", "paths.results=/tmp/a", "study=x"])
    b = compose_run_config(["experiment=tuned", "paths.results=/tmp/b", "study=y"])
    c = compose_run_config(["experiment=tuned", "trainer.steps=40"])
    assert config_hash(a) == config_hash(b)
    assert config_hash(a) != config_hash(c)


def test_run_dir_follows_study_and_arm():
    cfg = compose_run_config(["study=s1", "arm=a1", "paths.results=/r"])
    assert cfg.paths.run_dir == "/r/runs/s1/a1"
    assert cfg.paths.data_root == "/r/data"


@pytest.mark.parametrize(("overrides", "needle"), [
    (["profiler=off", "profiler.dataset=true"], "profiler.name is 'off'"),
    (["profiler=full", "profiler.start_step=99"], "profiler.start_step is 99"),
    (["profiler=full", "profiler.num_steps=-1"], "profiler.num_steps is -1"),
    (["profiler=light", "profiler.num_steps=0"], "profiler.num_steps is 0"),
    (["profiler=full", "profiler.placement=before"], "profiler.placement"),
    (["profiler=light", "profiler.sampling_interval_ms=0"], "profiler.sampling_interval_ms"),
    (["pipeline.extra_transform=nocolon"], "pipeline.extra_transform is 'nocolon'"),
    (["pipeline.extra_transform_workers=0"], "pipeline.extra_transform_workers is 0"),
    (["sweep.key=trainer.steps"], "sweep.key is 'trainer.steps'"),
    (["sweep.key=pipeline.reader_workers", "sweep.workers=[1,0]"], "sweep.workers is [1, 0]"),
    (["sweep.key=pipeline.reader_workers", "sweep.max_rounds=2"], "sweep.max_rounds is 2"),
    (["verify.budget_share=2.0", "verify.stretch_share=1.5"], "verify.stretch_share is 1.5"),
    (["verify.steady_steps=40"], "verify.steady_steps is 40"),
    (["verify.against_source_precision=1.5"], "verify.against_source_precision is 1.5"),
    (["verify.prediction_bound=-0.2"], "verify.prediction_bound is -0.2"),
    (["verify.against_source_budget_min_s=-5"], "verify.against_source_budget_min_s -5"),
    (["verify.against_source_bounds=[5,0]"], "verify.against_source_bounds is [5.0, 0.0]"),
])
def test_bad_profiler_and_transform_settings_are_one_sentence(overrides, needle):
    with pytest.raises(ConfigError) as info:
        compose_run_config(["size=smoke", *overrides])
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("name", "dataset", "timeline"), [("off", False, False), ("light", True, False),
                                                           ("full", True, True)])
def test_profiler_options_compose(name, dataset, timeline):
    cfg = compose_run_config(["size=smoke", f"profiler={name}"])
    assert (cfg.profiler.name, cfg.profiler.dataset, cfg.profiler.timeline) == (name, dataset, timeline)


def test_profile_window_follows_the_measured_steps_unless_inline():
    from perfstudy.measure.profiling import extra_steps, profile_window

    cfg = compose_run_config(["size=smoke", "profiler=full"])
    # steps 0-7 measured, 8 the profiling pipeline's start-up, 9-12 profiled
    assert (extra_steps(cfg.profiler), profile_window(cfg.profiler, 8, 1)) == (5, (9, 12))
    cfg = compose_run_config(["size=smoke", "profiler=light", "profiler.num_steps=2"])
    assert (extra_steps(cfg.profiler), profile_window(cfg.profiler, 8, 1)) == (3, (9, 10))
    cfg = compose_run_config(["size=smoke", "profiler=full", "profiler.placement=inline",
                              "profiler.num_steps=0"])
    assert (extra_steps(cfg.profiler), profile_window(cfg.profiler, 8, 1)) == (0, (2, 7))
    cfg = compose_run_config(["size=smoke", "profiler=full", "profiler.placement=inline",
                              "profiler.start_step=3", "profiler.num_steps=2"])
    assert profile_window(cfg.profiler, 8, 1) == (3, 4)
    off = compose_run_config(["size=smoke", "profiler=off"]).profiler
    assert (extra_steps(off), profile_window(off, 8, 1)) == (0, None)


def test_extra_transform_args_reach_the_transform():
    from perfstudy.run.transforms import Sleep, load_transform

    cfg = compose_run_config(["size=smoke", "pipeline.extra_transform=perfstudy.run.transforms:Sleep",
                              "+pipeline.extra_transform_args.milliseconds=7"])
    transform = load_transform(cfg.pipeline.extra_transform, dict(cfg.pipeline.extra_transform_args))
    assert isinstance(transform, Sleep) and transform.milliseconds == 7
    with pytest.raises(ValueError, match="cannot be imported"):
        load_transform("perfstudy.run.transforms:Nope")


@pytest.mark.parametrize("override", [
    "pipeline.extra_transform_args={iterations: 1200000}",  # as a user writes it: no +
    "pipeline.extra_transform_args.iterations=1200000",
    "+pipeline.extra_transform_args.iterations=1200000",
    "++pipeline.extra_transform_args.iterations=1200000"])
def test_a_users_callable_takes_its_arguments_with_or_without_plus(override):
    cfg = compose_run_config(["size=smoke", "experiment=python_loop", override])
    assert cfg.pipeline.extra_transform_args["iterations"] == 1200000
    with pytest.raises(ConfigError, match="Unknown config key 'pipeline.extra_transform_argz"):
        compose_run_config(["size=smoke", "pipeline.extra_transform_argz.iterations=1"])


def test_operator_addresses_and_factory_arguments_are_free_form_keys():
    cfg = compose_run_config(["size=smoke", "pipeline.workers.map_2=2", "pipeline.processes.map_2=true",
                              "model.args.width=2", "pipeline.args={jitter: 0.5}"])
    assert (cfg.pipeline.workers["map_2"], cfg.pipeline.processes["map_2"]) == (2, True)
    assert cfg.model.args["width"] == 2 and cfg.pipeline.args["jitter"] == 0.5
    with pytest.raises(ConfigError, match="Bad value for config key 'pipeline.workers.map_2'"):
        compose_run_config(["size=smoke", "pipeline.workers.map_2=many"])


def test_an_unknown_group_option_lists_only_the_options():
    with pytest.raises(ConfigError) as info:
        compose_run_config(["experiment=turbo"])
    assert str(info.value) == ("Unknown option 'turbo' for config group 'experiment'; "
                               f"use one of {', '.join(EXPERIMENTS)}.")


def test_the_autotune_arm_runs_without_dataset_profiling():
    cfg = compose_run_config(["experiment=autotune"])
    assert cfg.pipeline.autotune and cfg.profiler.name == "off"
    assert cfg.pipeline.num_parallel_workers is None  # AutoTune starts from the baseline
    with pytest.raises(ConfigError, match="cannot run with dataset profiling"):
        compose_run_config(["experiment=autotune", "profiler=light"])


def test_an_accelerator_this_install_lacks_is_refused_at_composition_in_one_sentence():
    """device=gpu trains on a GPU: on a CPU-only MindSpore the DAG refuses before any data is
    built; the override the sentence names makes it run."""
    from perfstudy.common import device
    from perfstudy.orchestrate.study import compose_arm
    from perfstudy.orchestrate.workflow_config import Workflow

    if device.available("GPU"):
        pytest.skip("this MindSpore has a GPU build")
    assert device.available("CPU")
    flow = {"study": "s", "results": "r", "overrides": ["size=paper", "device=gpu"],
            "studies": {"s": {"arms": {"baseline": ["experiment=baseline"]}}}}
    with pytest.raises(ConfigError) as error:
        compose_arm(Workflow.of(flow), "s", "baseline")
    sentence = str(error.value)
    assert "\n" not in sentence and sentence.startswith("Study 's', arm 'baseline': ")
    assert "device=gpu trains on GPU, which this MindSpore install cannot run" in sentence
    assert "add device=cpu to the overrides" in sentence
    flow["overrides"][-1] = "device=cpu"
    assert compose_arm(Workflow.of(flow), "s", "baseline").device.target == "CPU"
    flow["overrides"][-1] = "device=ascend"
    with pytest.raises(ConfigError, match=r"device=ascend trains on Ascend, which this MindSpore"):
        compose_arm(Workflow.of(flow), "s", "baseline")


@pytest.mark.parametrize("name, target, activities, metrics, gpus, gres, amp", [
    ("cpu", "CPU", ["CPU"], [], 0, "", "O0"),
    ("gpu", "GPU", ["CPU", "GPU"], ["gpu"], 1, "", "O2"),
    ("ascend", "Ascend", ["CPU", "NPU"], [], 0, "npu:1", "O2"),
])
def test_each_device_sets_its_target_profiler_metrics_slurm_and_precision_together(
        name, target, activities, metrics, gpus, gres, amp):
    cfg = compose_run_config([f"device={name}", "size=paper"])
    d = cfg.device
    assert (d.name, d.target, list(d.profiler_activities), list(d.system_metrics)) == (
        name, target, activities, metrics)
    assert (d.slurm_gpus, d.slurm_gres, cfg.trainer.amp_level) == (gpus, gres, amp)
    assert (cfg.pipeline.image_size, cfg.pipeline.batch_size) == (224, 32)  # size is its own
    # an experiment after the device group still sets its own precision
    assert compose_run_config([f"device={name}", "trainer.amp_level=O0"]).trainer.amp_level == "O0"


@pytest.mark.parametrize("override, said", [
    ("trainer.device_target=GPU", "is no longer a key: the device is chosen with the device group"),
    ("device.target=GPU", "device.target is GPU but device is cpu (CPU); choose the device with"),
    ("device.profiler_activities=[CPU,NPU]", "device.profiler_activities is ['CPU', 'NPU']; on cpu"),
    ("device.system_metrics=[tpu]", "device.system_metrics has ['tpu']; use [] or [gpu]"),
    ("device=tpu", "Unknown option 'tpu' for config group 'device'; use one of ascend, cpu, gpu"),
])
def test_a_wrong_device_setting_is_one_sentence(override, said):
    with pytest.raises(ConfigError) as error:
        compose_run_config([override])
    assert said in str(error.value) and "\n" not in str(error.value)


def test_a_config_written_before_the_device_group_still_loads(tmp_path):
    """config.yaml of an earlier run (trainer.device_target, no device group) reads as a device."""
    cfg = compose_run_config(["size=smoke"])
    data = OmegaConf.to_container(cfg)
    del data["device"]
    data["trainer"]["device_target"] = "CPU"
    path = tmp_path / "config.yaml"
    path.write_text(OmegaConf.to_yaml(data))
    loaded = load_run_config(path)
    assert (loaded.device.name, loaded.device.target, list(loaded.device.profiler_activities)) == (
        "cpu", "CPU", ["CPU"])
