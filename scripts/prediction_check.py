#!/usr/bin/env python
"""The what-if model's predictions against every recorded sweep, and its error band.

    python scripts/prediction_check.py                   # the table (leave one scenario out)
    python scripts/prediction_check.py --write-band      # and recalibrate the band the package ships
    python scripts/prediction_check.py --out /tmp/check --band /tmp/band.json --write-band
    python scripts/prediction_check.py --record /tmp/bench   # add a study's scenarios as cases

`--record RESULTS` copies, for every diagnosed scenario of RESULTS (a `scenarios`, `mindcv` or
`own_training` study's results folder) whose sweep was measured, what the model reads and the
sweep into docs/benchmarks/predictions/<scenario>-<commit>/ (perfstudy.decide.prediction_cases).
The check re-predicts every case with the code as it is now, judges each scenario's settings by
the band read from the other scenarios only, keeps the held-out transforms out of every band, and
writes docs/benchmarks/prediction-check.md (and .csv) beside printing it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import shutil
import sys
from pathlib import Path

import pandas as pd

from perfstudy.common.io import read_json
from perfstudy.common.records import write_record
from perfstudy.common.thresholds import GAIN_THAT_MATTERS, PREDICTION_TARGET, pct
from perfstudy.decide import prediction_cases as pc
from perfstudy.decide.prediction_band import AUTO, METHODS, shipped_band, write_band
from perfstudy.orchestrate.cli import UserError, main_guard, setup_logging
from perfstudy.present.document import md_table
from perfstudy.run.summary import ScenarioPlace, read_summary

log = logging.getLogger("prediction_check")
ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "docs" / "benchmarks" / "predictions"
OUT = ROOT / "docs" / "benchmarks" / "prediction-check"
BAND = ROOT / "src" / "perfstudy" / "decide" / "prediction_band.json"


def record(results: Path, cases: Path) -> list[Path]:
    """Copy every diagnosed scenario with a measured sweep under results/runs/* as a case."""
    written = []
    for study in sorted((results / "runs").glob("*")):
        for run in sorted(p for p in study.iterdir() if (p / "summary.json").exists()):
            summary = read_summary(run)
            place = summary.scenario
            if place is None or place.role != ScenarioPlace.DIAGNOSED:
                continue
            if not (run / "diagnosis.json").exists():
                log.warning("%s: not analysed yet (no diagnosis.json); not recorded", run.name)
                continue
            truth_dir = study / f"{place.truth or place.name}_sweep"
            if not (truth_dir / "summary.json").exists() or read_summary(truth_dir).sweep is None:
                log.warning("%s: no measured sweep (%s); not recorded", run.name, truth_dir)
                continue
            env = read_json(run / "environment.json") if (run / "environment.json").exists() else {}
            commit = (summary.git_sha or "unknown")[:7] + ("-dirty" if summary.git_dirty else "")
            folder = cases / f"{place.name}-{commit}"
            for part, source, files in (("diagnosed", run, ("summary.json", "pipeline_ops.csv")),
                                        ("truth", truth_dir, ("summary.json",))):
                (folder / part).mkdir(parents=True, exist_ok=True)
                for name in files:
                    if (source / name).exists():
                        shutil.copyfile(source / name, folder / part / name)
            info = pc.CaseInfo(place.name, place.truth or place.name, place.held_out, commit,
                               f"{env.get('cpu_model', '?')}, {env.get('usable_cpus', '?')} CPUs",
                               (summary.started_at or "")[:10],
                               f"snakemake --config study={summary.study} results={results}")
            write_record(folder / pc.CASE_FILE, info)
            written.append(folder)
    return written


def _held(point: pc.CasePoint) -> str:
    if not point.admitted:
        return "not admitted"
    held = "yes" if point.held_out else "no"
    return held if point.plausible else f"{held}; not admitted (faster than its operator alone)"


def _share(value: float | None) -> str:
    return "-" if value is None else pct(value)


def goals_table(by_method: dict[str, list[pc.Judged]]) -> pd.DataFrame:
    """The issue's goals, calibration and held-out apart, for each way of making the band."""
    rows = []
    for method, judged in by_method.items():
        for held, name in ((False, "calibration scenarios (each left out in turn)"),
                           (True, "held-out transforms (never in a band)")):
            g = pc.goals(judged, held)
            if g is None:
                continue
            rows.append({"cases": f"{name}: {g.cases}", "band": method, "settings": g.settings,
                         f"within {pct(PREDICTION_TARGET)} (goal >= 80 %)": _share(g.within_share),
                         f"top within {pct(GAIN_THAT_MATTERS)} (goal >= 90 %)": _share(g.top_share),
                         "90 % interval covers (goal >= 85 %)": _share(g.coverage),
                         "median half-width (goal <= 20 %)": _share(g.median_half_width)})
    return pd.DataFrame(rows)


def _truth(point: pc.CasePoint) -> str:
    """How precisely the sweep knows its median: the median's interval over its rounds."""
    if point.measured_low_ms is None or point.measured_high_ms is None:
        return f"({point.rounds})"
    return f"{point.measured_low_ms:.0f}-{point.measured_high_ms:.0f} ({point.rounds})"


def tables(judged: list[pc.Judged]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(every setting, every case) as the check prints them."""
    settings = pd.DataFrame([{
        "case": j.point.case, "held out": _held(j.point),
        "setting": j.point.setting + (" (own)" if j.point.own else ""),
        "measured (ms)": round(j.point.measured_ms),
        "measured: the sweep's interval (ms), rounds": _truth(j.point),
        "predicted (ms)": round(j.point.predicted_ms),
        "error": pct(j.point.relative, 1, signed=True), "binds": j.point.binding,
        "90 % interval (ms)": "open" if j.low_ms is None or j.high_ms is None
        else f"{j.low_ms:.0f}-{j.high_ms:.0f}",
        "covered": "yes" if j.covered else "NO", "band's errors": j.band_points} for j in judged])
    cases = pd.DataFrame([{
        "case": s.case, "held out": "yes" if s.held_out else "no" if s.admitted
        else "not admitted (a disturbed truth)", "settings": s.settings,
        f"within {pct(PREDICTION_TARGET)}": f"{s.within} of {s.settings}",
        "worst error": pct(s.worst, 1),
        "inside the sweep's interval": f"{s.inside_truth} of {s.settings}",
        f"top candidate within {pct(GAIN_THAT_MATTERS)}": f"{'yes' if s.top_within else 'NO'} "
                                                          f"({s.top_ratio:.2f}x)",
        "covered": f"{s.covered} of {s.settings}",
        "median half-width": _share(s.median_half_width)} for s in pc.score_cases(judged)])
    return settings, cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=CASES, help="the recorded cases")
    parser.add_argument("--record", type=Path, help="a study's results folder to record as cases")
    parser.add_argument("--write-band", action="store_true", help="recalibrate the shipped band")
    parser.add_argument("--out", type=Path, default=OUT, help="the table's path, without suffix")
    parser.add_argument("--band", type=Path, default=BAND, help="where --write-band writes it")
    args = parser.parse_args(argv)
    setup_logging()
    if args.record:
        if not (args.record / "runs").is_dir():
            raise UserError(f"{args.record} has no runs/ folder; pass the results folder a "
                            "scenarios study wrote (its results=...).")
        for folder in record(args.record, args.cases):
            log.info("recorded %s", folder)
    if not args.cases.is_dir() or not any(args.cases.glob(f"*/{pc.CASE_FILE}")):
        raise UserError(f"{args.cases} holds no recorded case; record one with --record RESULTS.")
    loaded = pc.load_cases(args.cases)
    for case in loaded:
        if not case.admitted:
            over, kept = case.disturbed
            log.info("%s: not admitted: %d of its sweep's %d kept windows had other processes "
                     "over the rounds' limit (its truth is shown, never read into a band)",
                     case.name, over, kept)
    points = [p for case in loaded for p in pc.case_points(case)]
    for p in points:
        if p.admitted and not p.plausible:
            log.info("%s at %s: not admitted: its sweep read %.0f ms, faster than its slowest "
                     "operator alone there (%.0f ms, the probe)", p.case, p.setting, p.measured_ms,
                     p.alone_ms)
    by_method = {method: pc.leave_one_out(points, method=method) for method in METHODS}
    settings, cases = tables(by_method[AUTO])
    goals = goals_table(by_method)
    band = pc.calibrate(points)
    text = "\n\n".join([
        "# The what-if model against every recorded sweep", md_table(goals), md_table(cases),
        md_table(settings),
        f"The band from every calibration scenario ({band.points} settings, "
        f"{len(band.scenarios)} sweeps): measured / predicted step within "
        f"{band.step.low:.2f}-{band.step.high:.2f}, the gain's error within "
        f"{band.gain.low:.2f}-{band.gain.high:.2f} ({pct(band.level)})." if band.step.low
        and band.step.high and band.gain.low and band.gain.high
        else f"The band from every calibration scenario: {json.dumps(dataclasses.asdict(band))}"])
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".md").write_text(text + "\n")
    settings.to_csv(args.out.with_suffix(".csv"), index=False)
    if args.write_band:
        log.info("band written to %s", write_band(band, args.band))
    elif shipped_band() != band:
        log.warning("the shipped band (%s) differs from the recorded cases' under this code: "
                    "run with --write-band", BAND)
    return 0


if __name__ == "__main__":
    sys.exit(main_guard(main))
