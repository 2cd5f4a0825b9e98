"""The study's own history, read back from the tracking store.

Every time track_study logs a scorecard, each claim's verdict and value are logged on the
study's parent run as metrics (`claim/<id>/result`: 1 holds, 0 does not hold, 0.5
inconclusive; `claim/<id>/median`, `/low`, `/high`), stamped with the results' own end time: a study run again
on new results adds a point, the same results logged twice add none. A parent run carries
the identity its points are comparable under (`context`): the study, its claims file, the
config hash of every arm and the machine kind (CPU model, usable CPUs). The history of a run
is every earlier point with the same study, claims and configs; points from another machine
kind are counted apart, never mixed in.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any

from perfstudy.decide.scorecard import History, PastClaim, PastRun, Scorecard
from perfstudy.present import mlflow_store

log = logging.getLogger(__name__)

TAG = mlflow_store.TAG
RESULT_VALUE = {"holds": 1.0, "does not hold": 0.0, "inconclusive": 0.5}
RESULT_NAME = {v: k for k, v in RESULT_VALUE.items()}


def _short(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def machine_kind(env: dict[str, Any]) -> str:
    """What makes timings comparable across runs: the CPU model and the CPUs the run could use."""
    return f"{env.get('cpu_model') or 'unknown CPU'}, {env.get('usable_cpus') or env.get('cpu_count')} CPUs"


def context(study: str, claims_file: str | Path | None, config_hashes: dict[str, str],
            machine: str) -> dict[str, str]:
    """The parent run's identity tags: runs whose points may be compared (machine apart)."""
    claims_text = Path(claims_file).read_text() if claims_file and Path(claims_file).is_file() else ""
    configs = ",".join(f"{arm}={h}" for arm, h in sorted(config_hashes.items()))
    return {f"{TAG}study": study, f"{TAG}claims_sha256": _short(claims_text),
            f"{TAG}configs_sha256": _short(configs), f"{TAG}machine": machine}


def context_of_runs(study: str, claims_file: str | Path | None, runs: list) -> dict[str, str]:
    """The context of a study's runs (config hashes per arm from their summaries; a study's
    repeats share their arm's hash, so a repeats study and a single run share history)."""
    hashes = {r.summary.arm: str(r.summary.config_hash) for r in runs}
    return context(study, claims_file, hashes, machine_kind(runs[0].summary.environment or {}))


def result_metrics(card: Scorecard) -> dict[str, float]:
    """A scorecard's history point: each judged claim's verdict as a number."""
    return {f"claim/{c.id}/result": RESULT_VALUE[c.result]
            for c in card.claims if c.result in RESULT_VALUE}


def read(uri: str, experiment_name: str, ctx: dict[str, str], claim_ids: list[str],
         exclude_stamp: int | None = None) -> History:
    """The earlier recorded runs of this context (`ctx`: the study's tags, its machine kind
    among them), each claim's result and value in each, or why none could be read. A store that
    does not exist yet has no history (it is not created here)."""
    machine = ctx.get(f"{TAG}machine", "unknown machine")
    db = mlflow_store.sqlite_file(uri)
    if db is not None and not db.is_file():
        return History(records=[], machine=machine)
    try:
        with mlflow_store.store_lock(uri):
            client = mlflow_store.client_for(uri)
            experiment = client.get_experiment_by_name(experiment_name)
            if experiment is None:
                return History(records=[], machine=machine)
            same = {k: v for k, v in ctx.items() if k != f"{TAG}machine"}
            query = " and ".join([f"tags.`{TAG}role` = 'study'"]
                                 + [f"tags.`{k}` = '{v}'" for k, v in same.items()])
            parents = client.search_runs([experiment.experiment_id], filter_string=query,
                                         max_results=500)
            # (run, stamp, its machine kind) -> claim id -> {"result": code, "value": median}
            points: dict[tuple[str, int, str], dict[str, dict[str, float]]] = {}
            for parent in parents:
                recorded_on = parent.data.tags.get(f"{TAG}machine", "unknown machine")
                for cid in claim_ids:
                    for kind, name in (("result", "result"), ("value", "median"), ("low", "low"),
                                       ("high", "high")):
                        for m in client.get_metric_history(parent.info.run_id, f"claim/{cid}/{name}"):
                            if exclude_stamp is not None and m.timestamp == exclude_stamp:
                                continue  # these very results, logged before
                            point = points.setdefault((parent.info.run_id, m.timestamp, recorded_on), {})
                            point.setdefault(cid, {})[kind] = m.value
    except mlflow_store.TrackingError as exc:
        return History(records=[], machine=machine, error=str(exc))
    records = [PastRun(stamp=stamp, machine=recorded_on, claims={
                   cid: PastClaim(result=RESULT_NAME.get(e.get("result")), value=e.get("value"),
                                  low=e.get("low"), high=e.get("high"))
                   for cid, e in claims.items()})
               for (_, stamp, recorded_on), claims in sorted(points.items(), key=lambda p: p[0][1])]
    return History(records=records, machine=machine)
