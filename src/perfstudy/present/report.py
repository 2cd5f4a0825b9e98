"""The study's comparison: tables, figures, verdicts, report.md and a self-contained report.html."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from perfstudy.common.io import write_csv, write_text_atomic
from perfstudy.decide import remedy_proof
from perfstudy.decide.arms import Arm
from perfstudy.decide.remedy_proof import Remedies, write_remedies
from perfstudy.decide.remedy_proof import frame as remedy_frame
from perfstudy.decide.scenarios import score as score_scenarios
from perfstudy.decide.scorecard import Scorecard
from perfstudy.present import document, figures, peers, repeats, scaling, scenarios, sentences, tables, verify


def build(study: str, runs: list[Arm], out_dir: str | Path, card: Scorecard) -> dict[str, Path]:
    """Write comparison.csv, repeats.csv, figures/*.png, report.md and report.html: the
    scorecard, the headline figure and the verdicts first, the detail below. Renders only.

    Args:
        study: the study's name (the title).
        runs: every run of the study; the detailed sections show each arm's first repeat, the
            repeats section all of them.
        out_dir: the report folder.
        card: the study's claims, already scored (perfstudy.decide.scorecard.make; one
            without claims says nothing is scored).

    Returns:
        Each file written, by name.
    """
    out = Path(out_dir)
    arms = [r for r in runs if r.summary.repeat == 1]
    table = tables.comparison_table(arms)
    spread = repeats.table(runs)
    paths = {"comparison": write_csv(out / "comparison.csv", table),
             "repeats": write_csv(out / "repeats.csv", spread)}
    prepared = remedy_proof.evidence(arms)
    if prepared.arms:  # the record for the later stages, the table for a spreadsheet
        paths["prepared_json"] = write_remedies(out, prepared)
        paths["prepared"] = write_csv(out / "prepared.csv", remedy_frame(prepared))
    across = _answers_across_repeats(runs, out, paths)
    scores, predicted = score_scenarios(runs)
    bench, bench_points = scenarios.table(scores), scenarios.points_table(predicted)
    if not bench.empty:
        paths["scenarios"] = write_csv(out / "scenarios.csv", bench)
        write_csv(out / "scenario_predictions.csv", bench_points)
    figs = _figures(arms, table, out / "figures", paths, runs)
    history_fig = figures.figure_claim_history(card, out / "figures" / "claim_history.png")
    if history_fig is not None:  # the scorecard's claims across the recorded runs, first
        paths["fig_claim_history"] = history_fig
        figs.insert(0, ("Each claim across the recorded runs on this machine kind", history_fig))
    doc = document.Document(f"Study {study}: {sentences.models(arms)} input-pipeline tuning")
    scored = bool(card.claims)
    doc.lead(card.headline if scored else scenarios.summary_line(scores) or None)
    if scored:
        note = " ".join(t for t in (card.reference, sentences.history_note(card)) if t)
        doc.section(card.title or "The claims, scored", tables.scorecard_table(card),
                    note=note or None, css="scorecard")
    if not bench.empty:  # a diagnosis benchmark's answer is its score: shown first, open
        doc.section("Diagnosis benchmark, by scenario", bench)
    doc.figure("Where a step's time goes, per arm", paths["fig_breakdown"], open_=True)
    doc.verdicts("Verdicts", _verdicts(arms, across, prepared))
    if "fig_verified" in paths:
        doc.figure("The verified candidates: each one's step against its arm's own, with its "
                   "interval", paths["fig_verified"], open_=True)
    _peer_sections(doc, arms, out, paths)
    doc.heading("Details")
    for title, content in _details(arms, spread, prepared, bench_points, runs):
        if content is not None:  # an optional section with nothing to say
            doc.section(title, content, collapsed=True)
    for title, path in figs:
        doc.figure(title, path)
    doc.footer(f"Provenance: {sentences.provenance(arms)}")
    paths["md"] = write_text_atomic(out / "report.md", doc.markdown())
    paths["html"] = write_text_atomic(out / "report.html", doc.html(study))
    return paths


def _figures(arms: list[Arm], table: pd.DataFrame, folder: Path, paths: dict[str, Path],
             runs: list[Arm]) -> list[tuple[str, Path]]:
    """Draw the figures into `folder` (their paths into `paths`); returns the detail figures
    with their titles, in the report's order (the breakdown is shown first, apart). Every run's
    queue figure is drawn (each repeat's MLflow run carries its own); the report shows the
    first repeat's."""
    folder.mkdir(parents=True, exist_ok=True)
    paths["fig_breakdown"] = figures.figure_breakdown(arms, folder / "step_breakdown.png")
    paths["fig_steps"] = figures.figure_steps(arms, folder / "step_time.png")
    paths["fig_published"] = figures.figure_published(table, folder / "published_vs_measured.png")
    for run in runs:  # each run's own: logged on its MLflow run under one name in every run
        paths[f"fig_queues_{run.name}"] = figures.figure_queues(run, folder / f"queues_{run.name}.png")
        figures.figure_verified([run], folder / f"verified_{run.name}.png")
        figures.figure_step_distribution([run], folder / f"steps_{run.name}.png")
    paths["fig_distribution"] = figures.figure_step_distribution(arms, folder / "step_distribution.png")
    verified = figures.figure_verified(arms, folder / "verified.png")
    if verified is not None:
        paths["fig_verified"] = verified
    figs = [("Step time distribution: gap against compute", paths["fig_distribution"]),
            ("Step time per step", paths["fig_steps"]),
            ("Published vs measured", paths["fig_published"])]
    figs += [(f"Data queues: {a.name}", paths[f"fig_queues_{a.name}"]) for a in arms]
    scaling_fig = scaling.figure_scaling(arms, folder / "scaling.png")
    if scaling_fig is not None:
        paths["fig_scaling"] = scaling_fig
        figs.append(("Step time against map workers, predicted and measured", scaling_fig))
    return figs


def _answers_across_repeats(runs: list[Arm], out: Path, paths: dict[str, Path]
                            ) -> dict[str, repeats.AcrossRepeats]:
    """Each arm's answer against run-to-run noise (answers.csv; none with one repeat)."""
    across = {a.arm: a for a in repeats.answers(runs)}
    if across:
        paths["answers"] = write_csv(out / "answers.csv", pd.DataFrame(
            [{"arm": a.arm, "repeats": a.repeats, "settled": a.settled,
              "step_spread": a.spread, "sentence": a.sentence} for a in across.values()]))
    else:  # one repeat: no answers across repeats (none left over from an earlier study)
        (out / "answers.csv").unlink(missing_ok=True)
    return across


def _verdicts(arms: list[Arm], across: dict[str, repeats.AcrossRepeats], prepared: Remedies
              ) -> list[tuple[str, str | None]]:
    """One line per arm (and its reasoning a click away), after a warning about unlike machines."""
    baseline = next((a for a in arms if a.name == "baseline"), None)
    unlike = sentences.machines_check(arms)
    verdicts: list[tuple[str, str | None]] = [(unlike, None)] if unlike else []
    for arm in arms:
        if not arm.diagnosis:  # not analysed: the measured floor only, no advice
            verdicts.append((sentences.verdict(arm, baseline), None))
            continue
        why = (f"{sentences.workers_text(arm.summary)}. {arm.diagnosis.headline} "
               f"{arm.diagnosis.recommendation.sentence}{remedy_proof.quote(arm, prepared)}")
        line = sentences.verdict_line(arm, baseline)
        if arm.summary.arm in across:
            answer = across[arm.summary.arm]
            why += " " + answer.sentence
            if not answer.settled:
                line += f" The {answer.repeats} repeats do not settle it (see why)."
        verdicts.append((line, why))
    return verdicts


def _peer_sections(doc: document.Document, arms: list[Arm], out: Path, paths: dict[str, Path]) -> None:
    """MindSpore's analyzer (and AutoTune) beside ours, and all of them scored against the arms."""
    side = peers.table(arms)
    if not side.empty:
        paths["peers"] = write_csv(out / "peers.csv", side)
        doc.section("Beside the tools you have: MindSpore's analyzer (and AutoTune) on the same runs", side)
    scored_peers = peers.against_sweep(arms)
    if not scored_peers.empty:
        paths["peers_scored"] = write_csv(out / "peers_scored.csv", scored_peers)
        doc.section("The tools scored against the measured arms", scored_peers)


def _details(arms: list[Arm], spread: pd.DataFrame, prepared: Remedies,
             bench_points: pd.DataFrame, runs: list[Arm]) -> list[tuple[str, Any]]:
    """The collapsed detail sections, in order (None: a section with nothing to say)."""
    exclusions = [f"{a.name}: {a.summary.steps_measured} measured, excluded "
                  f"{a.summary.steps_excluded_by_phase}; {a.summary.drain_rule}" for a in arms]
    return [
        ("Diagnosis benchmark: predicted against measured at every swept setting",
         tables.or_none(bench_points)),
        ("The remedy, measured: the source prepared at a bounded resolution",
         remedy_proof.lines(prepared) or None),
        ("Published vs measured", tables.published_vs_measured(arms)),
        ("Repeats: spread across seeds, and the speedup's interval",
         repeats.report_table(spread) if spread["repeats"].max() > 1 else None),
        ("Repeats: the rounds as they trained (a seeded random order per round)",
         repeats.order_lines(runs) or None),
        ("Diagnosis, side by side", tables.diagnosis_table(arms)),
        ("What-if advisor: predicted from one profiled run", scaling.advisor_lines(arms) or None),
        ("Verification: the model's candidates measured in interleaved rounds, each window a fresh pipeline",
         tables.or_none(verify.windows_table(arms))),
        ("Verification: what it cost", verify.cost_lines(arms) or None),
        ("The model's accuracy by operator kind (verification windows)",
         tables.or_none(verify.accuracy_by_kind(arms))),
        ("Predicted against measured, by worker count", tables.or_none(scaling.whatif_table(arms))),
        ("Pipeline operators over the profiled steps", tables.ops_table(arms)),
        ("Step trace: op timeline vs host timers, and the profiler's own effect",
         sentences.cross_check_lines(arms)),
        ("Which steps count", exclusions),
        ("Setup", tables.setup_table(arms)),
        ("Spread over the measured steps (ms)", tables.spread_table(arms)),
        ("What bounds each step", tables.floor_table(arms)),
        ("How to read these numbers", [sentences.NOTES]),
    ]
