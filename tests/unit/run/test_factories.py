"""Factories by Hydra's _target_ convention, and operators addressed on any built pipeline:
docs/examples/own_pipeline.py (the "Bring your own training" page's example) as the user's code."""

from pathlib import Path

import numpy as np
import pytest

from perfstudy.common.config import ConfigError, compose_run_config
from perfstudy.common.provenance import cpu_count
from perfstudy.data.dataset import load_manifest
from perfstudy.run import factories, pipeline
from perfstudy.run.settings import operator_settings
from perfstudy.run.verify import apply_settings

EXAMPLES = Path(__file__).resolve().parents[3] / "docs" / "examples"


@pytest.fixture
def own(monkeypatch):
    """The docs' own pipeline importable, as a user's module on PYTHONPATH."""
    monkeypatch.syspath_prepend(str(EXAMPLES))
    return "own_pipeline.make_dataset"


def _cfg(*overrides):
    return compose_run_config(["size=smoke", *overrides])


def test_a_users_pipeline_is_built_described_by_address_and_resized_on_its_built_tree(
        own, smoke_dataset):
    cfg = _cfg(f"pipeline._target_={own}", "pipeline.args.jitter=0.3",  # no + needed
               "pipeline.workers.map_2=2", "pipeline.processes.map_2=true",
               "pipeline.workers.imagefolder_1=1")
    root = load_manifest(smoke_dataset)["root"]
    data = pipeline.create_train_dataset(root, cfg.pipeline, num_batches=9, seed=1)
    nodes = pipeline.describe(data, cfg.pipeline)
    by_address = {n["address"]: n for n in nodes}
    # the study's repeat on top does not move the user's addresses (counted from the source)
    assert [n["address"] for n in nodes] == ["repeat_1", "batch_1", "map_3", "map_2", "map_1",
                                            "imagefolder_1"]
    assert [n["op_id"] for n in nodes] == list(range(6))
    jitter = by_address["map_2"]
    assert jitter["operations"] == ["Jitter"] and jitter["python"] is True
    assert (jitter["num_parallel_workers"], jitter["multiprocessing"]) == (2, True)
    assert jitter["config_key"] == "pipeline.workers.map_2" and jitter["per_batch"] is False
    assert by_address["imagefolder_1"]["num_parallel_workers"] == 1
    assert by_address["map_1"]["operations"] == ["Decode", "Resize"]
    assert by_address["map_1"]["python"] is False
    assert "config_key" not in by_address["batch_1"]
    settings = operator_settings(nodes)
    assert settings["pipeline.workers.map_2"] == 2
    assert settings["pipeline.workers.map_2:multiprocessing"] is True
    images, labels = next(data.create_tuple_iterator(num_epochs=1, output_numpy=True))
    assert images.shape == (4, 3, 32, 32) and labels.shape == (4,)
    # a verification window's candidate setting: threads, 1 worker, by the same address
    window = apply_settings(cfg.pipeline, {"pipeline.workers.map_2": 1})
    assert window.workers["map_2"] == 1 and window.processes["map_2"] is False
    assert cfg.pipeline.workers["map_2"] == 2  # the run's own config is left as it was


def test_one_map_mixing_cpp_and_python_is_one_python_operator_sized_by_its_address(
        own, smoke_dataset):
    """ModelZoo's way (the own_pipeline study): C++ decode/resize, the Python jitter and C++
    normalize in one map, which then runs Python and is sized (and put in processes) as map_1."""
    cfg = _cfg(f"pipeline._target_={own}", "pipeline.args.one_map=true",
               "pipeline.workers.map_1=2", "pipeline.processes.map_1=true")
    root = load_manifest(smoke_dataset)["root"]
    data = pipeline.create_train_dataset(root, cfg.pipeline, num_batches=3, seed=1)
    by_address = {n["address"]: n for n in pipeline.describe(data, cfg.pipeline)}
    assert set(by_address) - {"repeat_1"} == {"batch_1", "map_1", "imagefolder_1"}
    mixed = by_address["map_1"]
    assert mixed["operations"] == ["Decode", "Resize", "Jitter", "Rescale", "HWC2CHW"]
    assert mixed["python"] is True and mixed["config_key"] == "pipeline.workers.map_1"
    assert (mixed["num_parallel_workers"], mixed["multiprocessing"]) == (2, True)
    images, labels = next(data.create_tuple_iterator(num_epochs=1, output_numpy=True))
    assert images.shape == (4, 3, 32, 32) and images.dtype == np.float32 and labels.shape == (4,)


def test_the_case_study_pipeline_is_one_factory_its_keys_aliases_of_addresses(smoke_dataset):
    cfg = _cfg("experiment=python_loop", "pipeline.extra_transform_workers=2")
    root = load_manifest(smoke_dataset)["root"]
    data = pipeline.create_train_dataset(root, cfg.pipeline, num_batches=9, seed=1)
    keyed = {n["config_key"]: n["address"] for n in pipeline.describe(data, cfg.pipeline)
             if n.get("config_key")}
    assert keyed == {"pipeline.extra_transform_workers": "map_2",
                     "pipeline.num_parallel_workers": "map_1",
                     "pipeline.reader_workers": "imagefolder_1"}
    assert f"{pipeline.case_study.__module__}.case_study" == pipeline.BUILTIN == cfg.pipeline._target_
    # its operators take addresses too, on the built tree
    cfg = _cfg("pipeline.workers.map_1=2")
    data = pipeline.create_train_dataset(root, cfg.pipeline, num_batches=2, seed=1)
    assert {n["address"]: n["num_parallel_workers"] for n in pipeline.describe(data)}["map_1"] == 2


def _error(cfg, root=".") -> str:
    with pytest.raises(ConfigError) as caught:
        pipeline.create_train_dataset(root, cfg.pipeline, num_batches=2, seed=1)
    message = str(caught.value)
    assert "\n" not in message and message.endswith(".")
    return message


def test_bad_pipelines_are_one_sentence_each(own, smoke_dataset, tmp_path, monkeypatch):
    root = load_manifest(smoke_dataset)["root"]
    assert "does not import (ModuleNotFoundError" in _error(_cfg("pipeline._target_=nowhere.make"))
    (tmp_path / "user_bad.py").write_text(
        "import mindspore.dataset as ds\nimport numpy as np\n"
        "def a_list(root, batch_size, image_size, seed):\n    return [1, 2]\n"
        "def three(root, batch_size, image_size, seed):\n"
        "    return ds.NumpySlicesDataset({'a': np.zeros((8, 1)), 'b': np.zeros(8), 'c': np.zeros(8)})\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "returned a list, not a mindspore.dataset.Dataset" in _error(
        _cfg("pipeline._target_=user_bad.a_list"))
    assert "rows of 3 columns (a, b, c)" in _error(_cfg("pipeline._target_=user_bad.three"))
    wrong_arg = _error(_cfg(f"pipeline._target_={own}", "pipeline.args.jiter=0.3"), root)
    assert "takes no argument 'jiter'" in wrong_arg and "jitter" in wrong_arg
    assert "fix pipeline.args.jiter" in wrong_arg
    missing = _error(_cfg(f"pipeline._target_={own}", "pipeline.workers.map_9=1"), root)
    assert "pipeline.workers.map_9 names no sized operator" in missing
    assert "imagefolder_1, map_1, map_2, map_3" in missing
    too_many = _error(_cfg(f"pipeline._target_={own}", "pipeline.workers.map_2=64"), root)
    assert "outside 1.." in too_many
    not_a_map = _error(_cfg(f"pipeline._target_={own}", "pipeline.processes.imagefolder_1=true"),
                       root)
    assert "imagefolder_1 is neither a map nor a GeneratorDataset" in not_a_map
    clash = _error(_cfg(f"pipeline._target_={own}", "pipeline.args.batch_size=8"), root)
    assert "the study passes itself" in clash


def test_bad_models_are_one_sentence_each():
    with pytest.raises(ConfigError, match="does not import"):
        factories.build_model(_cfg("model._target_=mindcv.models.no_such_factory").model, 2)
    with pytest.raises(ConfigError, match="returned a dict, not a mindspore.nn.Cell"):
        factories.build_model(_cfg("model._target_=builtins.dict").model, 2)
    with pytest.raises(ConfigError, match="model.args.num_classes is 10 but the data has 2"):
        factories.build_model(_cfg("model.args.num_classes=10").model, 2)
    with pytest.raises(ConfigError, match="Unknown model nonet"):
        factories.build_model(_cfg("experiment=mindcv_mobilenet", "model.args.model_name=nonet").model, 2)


def test_a_factory_that_refuses_the_class_count_is_one_sentence():
    with pytest.raises(ConfigError, match="model._target_ builtins.list failed when called"):
        factories.build_model(_cfg("model._target_=builtins.list").model, 2)


def test_mindcv_recipe_unmodified_gives_the_mixed_map_with_randaugment(smoke_dataset):
    cfg = _cfg("experiment=mindcv_resnet50")
    root = load_manifest(smoke_dataset)["root"]
    data = pipeline.create_train_dataset(root, cfg.pipeline, num_batches=2, seed=1)
    nodes = {n["address"]: n for n in pipeline.describe(data, cfg.pipeline)}
    image_map = nodes["map_2"]
    assert "RandAugment" in image_map["operations"]
    assert image_map["operations"][0] == "RandomCropDecodeResize" and image_map["python"] is True
    assert image_map["num_parallel_workers"] == min(8, cpu_count())  # the recipe's, clamped
    assert nodes["map_1"]["operations"] == ["TypeCast"]  # mindcv's label cast
    assert nodes["map_3"]["per_batch"] is True and nodes["map_3"]["python"] is True  # Mixup
    assert factories.label_changers(data) == ["map_3"]
    images, labels = next(data.create_tuple_iterator(num_epochs=1, output_numpy=True))
    assert images.shape == (4, 3, 32, 32) and images.dtype.name == "float32"
    classes = load_manifest(smoke_dataset)["num_classes"]
    assert labels.shape == (4, classes) and labels.dtype.name == "float32"  # mixed rows
    assert np.allclose(labels.sum(axis=1), 1.0)
    assert factories.label_form(data) == ((4, classes), "float32")
    plain = pipeline.create_train_dataset(root, _cfg("experiment=mindcv_resnet50", "pipeline.args.mixup=0",
                                                     "pipeline.args.cutmix=0").pipeline, 2, 1)
    assert factories.label_changers(plain) == [] and factories.label_form(plain) is None


@pytest.mark.slow
def test_a_mindcv_training_is_diagnosed_and_its_candidates_measured_by_address(tmp_path):
    """mindcv's recipe and model through the whole run: trained, profiled, diagnosed, and the
    model's candidate settings measured in verification windows, all by address."""
    from perfstudy.orchestrate import analyze
    from perfstudy.run import train

    cfg = compose_run_config(["experiment=mindcv_mobilenet", "size=smoke", f"paths.results={tmp_path}",
                              "verify.candidates=2", "pipeline.workers.map_2=1"])
    summary = train.run(cfg, propose=analyze.propose)
    assert summary.operator_settings["pipeline.workers.map_2"] == 1
    # the per-batch Mixup map and the mixed map (RandAugment among C++ ops), each alone
    probed = {p.config_key: p for p in summary.calibration.operators}
    assert set(probed) == {"pipeline.workers.map_2", "pipeline.workers.map_3"}
    assert "RandAugment" in probed["pipeline.workers.map_2"].operation
    assert "Mixup" in probed["pipeline.workers.map_3"].operation
    assert probed["pipeline.workers.map_3"].per_batch
    plan = summary.verification.plan
    assert plan[0].role == "current" and len(plan) >= 2
    for entry in plan:
        assert entry.settings and all(k.startswith("pipeline.workers.") for k in entry.settings)
    assert any(p.settings != plan[0].settings for p in plan[1:])
    rounds = summary.verification.rounds
    assert {v.setting for v in rounds.kept()} == set(range(len(plan)))


def test_any_pipelines_python_maps_are_probed_alone_on_their_real_inputs(own, smoke_dataset, monkeypatch):
    """The operator probe on a user's pipeline: each map that runs Python (a Python op among
    C++ ones included) measured as the whole map, at 1..CPUs in threads and processes."""
    from perfstudy.run import opprobe

    # its GIL rounds always: beside another test's training a map this fast can read as waiting
    monkeypatch.setattr(opprobe, "WAITS_BELOW", 0.0)

    cfg = _cfg(f"pipeline._target_={own}")
    probes = opprobe.probe(cfg.pipeline, load_manifest(smoke_dataset)["root"], 2)
    assert [p.config_key for p in probes] == ["pipeline.workers.map_2"]  # Jitter's map only
    assert probes[0].operation == "map_2 [Jitter]" and probes[0].per_batch is False
    measured = {(p.workers, p.multiprocessing) for p in probes[0].measured() if p.wall_ms_per_batch > 0}
    assert measured == {(1, False), (2, False), (1, True), (2, True)}
    gil = probes[0].gil
    assert 0.0 <= gil.gil_ms_per_batch <= gil.wall_ms_per_batch_alone  # measured


@pytest.mark.slow
def test_a_network_with_fewer_outputs_than_classes_stops_before_training(tmp_path, smoke_dataset,
                                                                         monkeypatch):
    """The precompile step trains on the top class: a head too small is one sentence there,
    before the pipeline starts."""
    from perfstudy.run import train

    (tmp_path / "user_net.py").write_text(
        "from mindspore import nn, ops\n"
        "class Tiny(nn.Cell):\n"
        "    def __init__(self, num_classes, outputs=1):\n"
        "        super().__init__()\n"
        "        self.mean = ops.ReduceMean()\n"
        "        self.head = nn.Dense(3, outputs)\n"
        "    def construct(self, x):\n"
        "        return self.head(self.mean(x, (2, 3)))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = compose_run_config(["size=smoke", f"paths.results={tmp_path}", "verify.candidates=0",
                              "model._target_=user_net.Tiny", "model.args.outputs=1"])
    with pytest.raises(ConfigError, match="gives fewer outputs than the data's 2 classes"):
        train.run(cfg, manifest_path=smoke_dataset)
    assert not (tmp_path / "runs" / "adhoc" / "adhoc" / "steps.csv").exists()
    cfg = compose_run_config(["size=smoke", f"paths.results={tmp_path}",
                              "model._target_=user_net.Nope"])
    with pytest.raises(ConfigError, match="does not import"):
        train.run(cfg, manifest_path=smoke_dataset)
    cfg = compose_run_config(["size=smoke", f"paths.results={tmp_path}", "data.prepared=true",
                              "experiment=mindcv_mobilenet", "data.prepared_format=mindrecord"])
    with pytest.raises(ConfigError, match="only the case study's pipeline reads"):
        train.run(cfg, manifest_path=smoke_dataset)


def test_a_decoding_map_that_runs_python_is_probed_again_on_its_rows_prepared(smoke_dataset, monkeypatch):
    """mindcv's image map (decode + RandAugment) probed on its captured rows and again on the
    same rows prepared at the bound, as data.prepared's copy prepares each file: the decode
    remedy's prediction reads the map's measured cost there. A map that decodes nothing is
    probed once."""
    from perfstudy.data import prepare
    from perfstudy.run import opprobe

    monkeypatch.setattr(opprobe, "WAITS_BELOW", 0.0)  # its GIL rounds always (as above)
    cfg = _cfg("experiment=mindcv_resnet50")
    settings = prepare.Settings.from_config(compose_run_config(["size=smoke", "experiment=mindcv_resnet50"]))
    probes = {p.config_key: p for p in opprobe.probe(cfg.pipeline, load_manifest(smoke_dataset)["root"],
                                                      1, settings)}
    image_map = probes["pipeline.workers.map_2"]
    on_prepared = image_map.prepared
    # the smoke photos (320 x 240) prepared at the 32 px crop bound (152 x 114), as the copy does
    assert on_prepared.megapixels_before == pytest.approx(320 * 240 / 1e6)
    assert prepare.target_size(320, 240, settings) == (152, 114)
    assert on_prepared.megapixels_after == pytest.approx(152 * 114 / 1e6)
    assert on_prepared.rows == 4  # a smoke batch of rows, as captured
    assert {(p.workers, p.multiprocessing) for p in on_prepared.measured()} == {(1, False), (1, True)}
    assert on_prepared.gil is not None
    assert probes["pipeline.workers.map_3"].prepared is None  # the Mixup map decodes nothing
    # the run's own pipeline read already prepared (or no remedy settings): probed once
    assert all(p.prepared is None for p in opprobe.probe(
        cfg.pipeline, load_manifest(smoke_dataset)["root"], 1, None))
