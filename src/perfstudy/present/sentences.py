"""The report's sentences: each arm's verdict line, the setup and provenance lines, the notes."""

from __future__ import annotations

from perfstudy.common.thresholds import pct
from perfstudy.decide.advisor import describe_changes
from perfstudy.decide.arms import Arm
from perfstudy.decide.diagnosis import input_bound_band, verdict_label
from perfstudy.decide.scorecard import Scorecard
from perfstudy.run.settings import ADDRESSED, BUILTIN_PIPELINE, MP
from perfstudy.run.summary import RunSummary


def workers_text(summary: RunSummary) -> str:
    factory = summary.factories.pipeline
    if factory != BUILTIN_PIPELINE:  # a user's pipeline: its operators by address
        settings = summary.operator_settings or {}
        sized = [f"{key.removeprefix(ADDRESSED)} {value} worker{'s' if value != 1 else ''}"
                 + (" in processes" if settings.get(key + MP) else "")
                 for key, value in settings.items() if not key.endswith(MP)]
        return f"{factory.rpartition('.')[2]}: {', '.join(sized) or 'as built'}"
    workers = summary.num_parallel_workers
    if workers.requested is None:
        return f"map() without num_parallel_workers ({workers.effective} worker by default)"
    text = f"num_parallel_workers={workers.requested}"
    if workers.clamped:
        text += f" (clamped to {workers.effective}: {workers.cpu_count} CPUs)"
    return text


def verdict(arm: Arm, baseline: Arm | None) -> str:
    """One sentence per arm: how input-bound, how fast, and the diagnosis's answer (the one
    decision.decide gave; without a diagnosis, only the measured floor, no advice)."""
    s = arm.summary
    band = input_bound_band(s.gap_share)
    head = (f"{arm.name} ({workers_text(s)}): "
            + ("not input-bound" if band == "not" else f"{band} input-bound")
            + f", the step waits for data {pct(s.gap_share)} of the time "
            f"(gap {s.gap_ms.mean:.0f} ms of a {s.steady_step_ms:.0f} ms steady step)")
    if baseline is not None and arm is not baseline:
        head += f", {baseline.summary.steady_step_ms / s.steady_step_ms:.2f}x the baseline's speed"
    if arm.diagnosis:
        return f"{head}. {arm.diagnosis.headline} {arm.diagnosis.recommendation.sentence}"
    return (f"{head}; its binding floor is {s.binding_floor} ({s.floor_ms:.0f} ms, reached at "
            f"{s.steady_vs_floor:.2f}x); run the analyze rule for a diagnosis.")


# What to do when no worker setting helps, by the kind of the culprit (decision.culprit_kind);
# the full remedy, with its numbers, is in the reasoning one click away. data.prepared serves
# any pipeline (a MindRecord for the case study's, an ImageFolder copy for a user's factory).
REMEDY_WORDS = {"decode": "decode less (data.prepared=true)", "python": "vectorise it or make it a C++ op",
                "waits": "fetch asynchronously or cache", "computes": "cheaper transforms or more cores"}


MAX_VERDICT_WORDS = 40


def models(arms: list[Arm]) -> str:
    """The models the study trained, as the title names them ('ResNet50': the study's own)."""
    names = sorted({a.summary.factories.model_name or "resnet50" for a in arms})
    return " and ".join("ResNet50" if n == "resnet50" else n for n in names)


def _short_label(label: str) -> str:
    """'Map #2 [RandomCropDecodeResize, RandomHorizontalFlip, ...] (map_1)' ->
    'Map #2 [RandomCropDecodeResize, …] (map_1)'."""
    head, bracket, rest = label.partition(" [")
    if not bracket:
        return label
    inside, _, tail = rest.partition("]")
    ops = inside.split(", ")
    return f"{head} [{ops[0]}{', …' if len(ops) > 1 else ''}]{tail}"


def verdict_line(arm: Arm, baseline: Arm | None) -> str:
    """The arm's answer in one line (at most 40 words): verdict, culprit, what to do, the gain
    predicted for it, and the step measured. It presents decision.decide's answer, nothing else."""
    d, s = arm.diagnosis, arm.summary
    rec = d.recommendation
    parts = [verdict_label(d.bound)]
    if rec.culprit_label:
        parts.append(f"culprit {_short_label(rec.culprit_label)}")
    action, kind = rec.action, rec.culprit_kind
    prepared = rec.prepared_prediction
    if action == "set_workers":
        parts.append(f"do: set {describe_changes(rec.changes, d.advisor)}")
        if rec.verified:  # the promise is the measured ratio with its interval; the prediction beside it
            comp = rec.verification.picked.comparison
            parts.append(f"verified {rec.verified_now_ms:.0f} → {rec.verified_step_ms:.0f} ms "
                         f"(step {comp.words()}; predicted {rec.predicted_step_ms:.0f})")
        else:
            parts.append(f"predicted {rec.predicted_now_ms:.0f} → {rec.predicted_step_ms:.0f} ms "
                         f"({1 + rec.predicted_gain:.2f}x, not verified)")
    elif action == "inconclusive":
        parts.append("do: nothing yet (inconclusive: a gain within the interval); raise "
                     "verify.max_rounds")
    elif action == "not_steady":
        needed = rec.validity.steps_needed
        parts.append(f"do: run trainer.steps >= {needed}" if needed else "do: run more trainer.steps")
    else:
        decode = kind == "decode" or any(str(r).startswith("decode less") for r in rec.remedies)
        measured_word = " (measured)" if rec.verified else ""
        decode_words = REMEDY_WORDS["decode"]
        todo = (f"no worker setting helps{measured_word}; " if action == "cannot_help"
                else f"keep the settings{measured_word}; ") + (
            decode_words if decode else REMEDY_WORDS.get(kind, "more cores or an accelerator"))
        parts.append(f"do: {todo}")
        if decode and prepared:
            parts.append(f"predicted {prepared.now:.0f} ms prepared")
    measured = f"measured {s.steady_step_ms:.0f} ms"
    if baseline is not None and arm is not baseline:
        measured += f", {baseline.summary.steady_step_ms / s.steady_step_ms:.2f}x the baseline"
    return f"{arm.name}: " + "; ".join([*parts, measured]) + "."


def cross_check_lines(arms: list[Arm]) -> list[str]:
    lines = []
    for arm in arms:
        cross = arm.diagnosis.cross_check if arm.diagnosis else None
        if cross:
            extra = ""
            if cross.steps:
                extra = (f" Timeline medians: forward+backward {cross.tl_fwd_bwd_ms_median:.0f} ms, "
                         f"tail {cross.tl_tail_ms_median:.0f} ms, optimizer kernels busy "
                         f"{cross.optimizer_busy_ms_median:.0f} ms.")
            lines.append(f"{arm.name}: {cross.sentence}{extra}")
        effect = (arm.diagnosis.profiler_effect if arm.diagnosis else None)
        if effect:
            lines.append(f"{arm.name}, profiler's own effect: {effect.sentence}")
        else:
            profiler = arm.summary.profile.profiler
            lines.append(f"{arm.name}: no op timeline (profiler={profiler}).")
    return lines


def machines_check(arms: list[Arm]) -> str | None:
    """One sentence when the arms ran on unlike machines (CPU model or usable cores differ):
    their speedups then compare machines as well as settings."""
    seen = {}
    for arm in arms:
        env = arm.summary.environment or {}
        kind = (env.get("cpu_model"), env.get("usable_cpus") or env.get("cpu_count"))
        seen.setdefault(kind, []).append(arm.name)
    if len(seen) < 2:
        return None
    parts = "; ".join(f"{', '.join(names)} on {model} x{cores}" for (model, cores), names in seen.items())
    return (f"The arms ran on unlike CPUs ({parts}): their speedups compare machines as well as "
            "settings, so do not read them as the settings' effect; run every arm on one node type "
            "(with a SLURM --constraint) and compare again.")


def _hosts(arms: list[Arm]) -> str:
    """Where each arm ran: host and scheduler job (when there was one)."""
    out = []
    for arm in arms:
        env = arm.summary.environment or {}
        job = (env.get("scheduler") or {}).get("job_id")
        out.append(f"{arm.name} {env.get('host', '?')}" + (f" (SLURM job {job})" if job else ""))
    return ", ".join(out)


def provenance(arms: list[Arm]) -> str:
    """The footer: what every number above was made with (summary.json of each arm)."""
    s = arms[0].summary
    env = s.environment
    shas = sorted({(a.summary.git_sha, bool(a.summary.git_dirty)) for a in arms})
    code = "; ".join(f"git {sha}{' (dirty: uncommitted changes)' if dirty else ''}"
                     for sha, dirty in shas)
    datasets = ", ".join(sorted({a.summary.dataset_sha256[:16] for a in arms}))
    configs = ", ".join(f"{a.name} {a.summary.config_hash}" for a in arms)
    mindspore = s.mindspore_version + (f" (commit {s.mindspore_commit})"
                                          if s.mindspore_commit else "")
    packages = ", ".join(f"{k} {v}" for k, v in env["packages"].items() if k != "mindspore")
    return (f"{code}; config hash {configs}; dataset sha256 {datasets}; hosts {_hosts(arms)}; "
            f"{env['cpu_model']} x"
            f"{env.get('usable_cpus') or env['cpu_count']} CPUs, {env['os']}, Python "
            f"{env['python']}; MindSpore {mindspore}; {packages}. Every run's full environment "
            "(all packages, CPU flags, memory) is its environment.json, also in MLflow.")


NOTES = (
    "Steady step = wall time of the measured window / its steps (the tuned arm's steps "
    "alternate fast and slow, so the median misleads). The iteration gap is the time a step "
    "waits for its batch; its share of the step is what the article's MindInsight step trace "
    "shows. The CPU floor is (pipeline CPU-ms + network CPU-ms per batch) / cores, each "
    "measured alone after training; an arm's floor is the slowest of network alone, pipeline "
    "alone and the CPU floor, so 'what this hardware allows' is the baseline's step over the "
    "tuned arm's floor (an estimate: an arm can beat it by a few %). Step 0 (graph compile, or "
    "the pipeline's start-up when the graphs were compiled first) and the warm-up steps are "
    "excluded, then the drain rule drops steps served from a queue filled during the compile "
    "(see 'Which steps count'). The article ran on an accelerator at 224 px; this machine is "
    "a CPU, so absolute times differ by design: compare gap shares and speedups.")


def history_note(card: Scorecard) -> str | None:
    """Under the scorecard: where its history comes from (or why it could not be read)."""
    h = card.history
    if not h:
        return None
    if h.error:
        return f"History not read: {h.error}"
    text = (f"History: {h.runs} recorded run(s) of this study, claims and configs on this machine "
            f"kind ({h.machine}), this one included, read back from the tracking store")
    if h.other_machines:
        text += f"; {h.other_machines} run(s) on other machine kinds are not mixed in"
    return text + (". Fragile: the verdict changed across the runs, or the margin to the bound is "
                   "inside the spread of the values across them.")
