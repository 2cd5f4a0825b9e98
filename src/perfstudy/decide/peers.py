"""The tools a MindSpore user already has, read on the same run, in our terms.

* MindSpore's MindData analyzer (perfstudy.measure.msanalyzer) names one operator and a knob
  from the run's dataset profile; its operator is MindData's op id, which the run's operator
  table (pipeline_ops.csv: the same profile, with our config keys) names as a user would.
* Dataset AutoTune, where the study runs it as an arm: the setting it settled on (its saved
  configuration, per op id) and the step that arm measured.
* Ours: the recommendation's culprit and setting.
Each is a `Reading` (kept in diagnosis.json's `peers` as `Readings`): tool, operator (label), key (the config key
sizing it, None when no key does), knob (workers | prefetch_size | None), advice (in words)
and, where it is a worker count of a keyed operator, settings ({key: workers}) a sweep can score.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from perfstudy.common.records import doc
from perfstudy.decide.decision import Recommendation
from perfstudy.decide.whatif import canonical
from perfstudy.measure import msanalyzer
from perfstudy.measure.minddata import op_label
from perfstudy.run.autotune import TunedOp
from perfstudy.run.settings import MP, Settings
from perfstudy.run.summary import RunSummary

ANALYZER = msanalyzer.TOOL
OURS = "perfstudy"
AUTOTUNE = "MindSpore's Dataset AutoTune"

@dataclass(frozen=True)
class Reading:
    """One tool's answer on a run."""

    tool: str = doc("the tool: perfstudy, MindSpore's MindData analyzer, Dataset AutoTune")
    operator: str | None = doc("the operator it names, as the report labels it (None: none)",
                               default=None)
    key: str | None = doc("the config key sizing that operator (None: no key does)", default=None)
    knob: str | None = doc("workers | prefetch_size | None", default=None)
    advice: str = doc("its advice in words", default="")
    settings: Settings | None = doc("its advice as settings a sweep can place (worker counts "
                                    "of keyed operators only)", default=None)
    error: str | None = doc("why the tool could not run (None: it ran)", default=None)
    raw: dict[str, Any] | None = doc("the tool's own output as it gave it (MindSpore's "
                                     "analyzer: its warning, suggestion and parsed fields)",
                                     default=None)
    operators: list[str] = doc("AutoTune: every operator's settled workers and prefetch",
                               default_factory=list)
    step_ms: float | None = doc("AutoTune: the step its arm measured", default=None)
    speedup: float | None = doc("AutoTune: the baseline's step over its", default=None)


@dataclass(frozen=True)
class Readings:
    """Ours beside the tools users have, on the same run."""

    ours: Reading = doc("our recommendation as a reading")
    msanalyzer: Reading | None = doc("MindSpore's analyzer on the run's dataset profile (None: "
                                     "no profile)", default=None)
    autotune: Reading | None = doc("what AutoTune settled on (None: not an AutoTune arm)",
                                   default=None)



def described_ops(described: list[dict[str, Any]]) -> pd.DataFrame:
    """A run's operators from profile/pipeline.json (written with the profiler off too): MindData
    numbers them consumer first, as pipeline.describe lists them."""
    rows = []
    for op_id, node in enumerate(described):
        label = op_label(node.get("op_type", "?").removesuffix("Dataset"), op_id,
                         node.get("operations") or [], node.get("address"))
        rows.append({"op_id": op_id, "label": label, "config_key": node.get("config_key"),
                     "num_workers": node.get("num_parallel_workers")})
    return pd.DataFrame(rows, columns=["op_id", "label", "config_key", "num_workers"])


def _row(ops: pd.DataFrame | None, op_id: int | None) -> pd.Series | None:
    """The operator table's row of MindData op `op_id` (None when it has none)."""
    if ops is None or op_id is None or "op_id" not in ops:
        return None
    rows = ops[ops["op_id"] == op_id]
    return None if rows.empty else rows.iloc[0]


def _op(ops: pd.DataFrame | None, op_id: int | None) -> dict[str, Any]:
    row = _row(ops, op_id)
    if row is None:
        return {}
    key = row.get("config_key")
    return {"operator": row["label"], "key": key if isinstance(key, str) and key else None}


def _configured_workers(ops: pd.DataFrame | None, op_id: int | None) -> int | None:
    row = _row(ops, op_id)
    workers = None if row is None else row.get("num_workers")
    return None if workers is None or pd.isna(workers) else int(workers)


def analyzer(raw: dict[str, Any], ops: pd.DataFrame | None) -> Reading:
    """MindSpore's analyzer's answer (msanalyzer.read) as a reading."""
    tool = raw.get("tool", ANALYZER)
    if "error" in raw:
        return Reading(tool, advice="did not run", error=raw["error"], raw=raw)
    op = _op(ops, raw.get("op_id"))
    operator = op.get("operator") or raw.get("warning") or None
    key = op.get("key")
    if raw.get("knob") == "num_parallel_workers":
        knob = "workers"
        advice = f"set {key or operator + ' num_parallel_workers'}={raw['workers']}"
        settings = {key: raw["workers"]} if key else None
    elif raw.get("knob") == "prefetch_size":
        knob, advice, settings = "prefetch_size", "increase prefetch_size", None
    else:
        knob, advice, settings = None, "none named", None
    return Reading(tool, operator, key, knob, advice, settings, raw=raw)


def ours(recommendation: Recommendation) -> Reading:
    """Our answer as a reading."""
    changes = recommendation.changes or {}
    action = recommendation.action
    change = action == "set_workers"
    return Reading(OURS, recommendation.culprit_label, recommendation.culprit_key,
                   "workers" if change else None,
                   _words(changes) if change else {
                       "not_steady": "no verdict (window not steady)"}.get(action, "keep the setting"),
                   canonical(recommendation.settings or {}) if change else None)


def _words(changes: Settings) -> str:
    parts = []
    for key, value in changes.items():
        if key.endswith(MP):
            continue
        parts.append(f"set {key}={value}" + (" in processes" if changes.get(key + MP) else ""))
    return ", ".join(parts) or "switch processes"


def _stem(name: str) -> str:
    """An operator's type as AutoTune (MapOp, ImageFolderOp) or a label (Map #2, ImageFolder #3)
    names it: map, imagefolder."""
    word = str(name).split(" ")[0].split("#")[0]
    return word.removesuffix("Op").removesuffix("Dataset").lower()


def _id_shift(tuned_ops: list[TunedOp], ops: pd.DataFrame | None) -> int:
    """How far AutoTune's op ids are from the run's operator table: its tree is the one the
    iterator ran, with an epoch-control op on top when the training iterates epochs
    (docs/lab-notes.md#autotune-ids). The shift under which every op's type matches; 0 when
    none does."""
    if ops is None or "op_id" not in ops or not tuned_ops:
        return 0
    types = {int(r["op_id"]): _stem(r["label"]) for _, r in ops.iterrows()}
    for shift in (0, 1, 2, -1):
        if all(types.get(op.op_id - shift) == _stem(op.op) for op in tuned_ops):
            return shift
    return 0


def _out_of_reach(ops: pd.DataFrame | None, tuned_ids: set[int]) -> list[str]:
    """The run's operators AutoTune cannot act on, said where it reports: a Python source
    (it skips GeneratorOp), which it neither sizes nor moves between threads and processes."""
    if ops is None or "op_id" not in ops or "label" not in ops:
        return []
    return [f"{r['label']}: not tuned (AutoTune skips a GeneratorDataset; it never switches "
            "threads and processes)" for _, r in ops.iterrows()
            if _stem(r["label"]) == "generator" and int(r["op_id"]) not in tuned_ids]


def autotune(summary: RunSummary, ops: pd.DataFrame | None, baseline_ms: float | None = None
             ) -> Reading | None:
    """What an AutoTune arm settled on (its operators' workers, by op id, named by the run's
    operator table) and the step it measured; None for an arm that is not AutoTune's."""
    tuned = summary.autotune
    if not tuned:
        return None
    settings, named, changed = {}, [], []
    shift = _id_shift(tuned.operators, ops)
    for op in tuned.operators:
        op_id = op.op_id - shift
        found = _op(ops, op_id)
        label = found.get("operator") or f"{op.op}#{op_id}"
        named.append(f"{label}: {op.num_parallel_workers} workers, prefetch {op.prefetch_size}")
        if found.get("key"):
            settings[found["key"]] = op.num_parallel_workers
        configured = _configured_workers(ops, op_id)
        if configured is not None and op.num_parallel_workers != configured:
            changed.append(label)
    named += _out_of_reach(ops, {op.op_id - shift for op in tuned.operators})
    step = summary.steady_step_ms
    return Reading(AUTOTUNE, ", ".join(changed) or "none changed", None,
                   "workers" if changed else None,
                   "; ".join(named) if named else tuned.remark or "saved no configuration",
                   settings or None, operators=named, step_ms=step,
                   speedup=baseline_ms / step if baseline_ms and step else None)
