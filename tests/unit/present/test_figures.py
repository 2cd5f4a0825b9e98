"""The report's evidence pictures: the verified candidates as a forest plot, and each arm's
step-time distribution (gap against compute)."""

from pathlib import Path
from types import SimpleNamespace

import matplotlib.image
import pandas as pd

from perfstudy.decide.arms import Arm
from perfstudy.measure.rounds import Comparison
from perfstudy.present import figures


def _arm(name: str, comparisons: list[Comparison | None], steps: pd.DataFrame | None = None,
         reused: dict[int, str] | None = None) -> Arm:
    reused = reused or {}
    settings = [SimpleNamespace(label="own", comparison=None, reused_from=None)]
    settings += [SimpleNamespace(label=f"pipeline.num_parallel_workers={i + 2}", comparison=c,
                                 reused_from=reused.get(i + 1))
                 for i, c in enumerate(comparisons)]
    checked = SimpleNamespace(settings=settings)
    diagnosis = SimpleNamespace(recommendation=SimpleNamespace(verification=checked))
    return Arm(name, None, steps if steps is not None else pd.DataFrame(), diagnosis)


def _pixels(path: Path):
    return matplotlib.image.imread(path)


def test_the_forest_plot_draws_one_row_per_measured_candidate(tmp_path):
    faster = Comparison(1, 4, 0.75, 0.65, 0.87, 0.95, "faster", 0.10)
    open_ = Comparison(2, 3, 0.97, 0.80, 1.18, 0.95, "inconclusive", 0.10, rounds_needed=9)
    unpaired = Comparison(3, 0, None, None, None, 0.95, "inconclusive", 0.10)
    arms = [_arm("baseline", [faster, open_, unpaired]), _arm("tuned", [None])]
    assert [label for label, _ in figures.verified_rows(arms[0])] == [
        "baseline: pipeline.num_parallel_workers=2", "baseline: pipeline.num_parallel_workers=3"]
    assert figures.verified_rows(arms[1]) == []
    settled_there = _arm("tuned", [open_, faster], reused={2: "baseline"})  # not measured again
    assert [label for label, _ in figures.verified_rows(settled_there)] == [
        "tuned: pipeline.num_parallel_workers=2", "tuned: pipeline.num_parallel_workers=3 (baseline's rounds)"]
    path = figures.figure_verified(arms, tmp_path / "verified.png")
    one = figures.figure_verified(arms[:1], tmp_path / "one.png")
    assert path is not None and _pixels(path).shape[0] > 100
    assert _pixels(one).shape == _pixels(path).shape  # rows: the candidates with a ratio only
    three = _arm("prepared", [faster])
    taller = figures.figure_verified([arms[0], three], tmp_path / "taller.png")
    assert _pixels(taller).shape[0] > _pixels(path).shape[0]


def test_no_verified_candidate_draws_no_forest_plot(tmp_path):
    no_diagnosis = Arm("a", None, pd.DataFrame())
    unverified = Arm("b", None, pd.DataFrame(), SimpleNamespace(
        recommendation=SimpleNamespace(verification=None)))
    assert figures.figure_verified([no_diagnosis, unverified], tmp_path / "v.png") is None
    assert _pixels(tmp_path / "v.png").shape[0] < 200  # drawn, saying why (the DAG registers it)


def test_the_step_distribution_shows_each_arms_measured_steps(tmp_path):
    steps = pd.DataFrame({"phase": ["startup", "measured", "measured", "measured"],
                          "gap_ms": [900.0, 0.0, 50.0, 80.0], "fwd_bwd_ms": [500.0, 400, 420, 410],
                          "step_ms": [1400.0, 400, 470, 490]})
    arms = [Arm("baseline", None, steps), Arm("tuned", None, steps.assign(gap_ms=1.0))]
    path = figures.figure_step_distribution(arms, tmp_path / "d.png")
    single = figures.figure_step_distribution(arms[:1], tmp_path / "s.png")
    assert _pixels(path).shape[0] > _pixels(single).shape[0] > 100
