#!/usr/bin/env bash
# The seed case on an accelerator, prepared to run as one command on a GPU (or Ascend) host and
# bring one folder back: study `device_check` (workflow/config.yaml) at the article's input
# (size=paper: 224 px, batch 32) on `device`, its map at 1, 8, 12 and 16 workers, each arm
# profiled, verified in rounds and scored against the article's claims; the report and the
# MLflow store (SQLite) written under OUT.
#
#   scripts/device_check.sh                 # device=gpu, OUT=results/device_check
#   scripts/device_check.sh ascend /tmp/npu # device=ascend, another folder
#   DRY_RUN=1 scripts/device_check.sh cpu /tmp/plan   # the plan only (snakemake -n)
#
# Needs MindSpore's build for the device in .venv (make setup installs the CPU wheel): on a host
# whose MindSpore cannot run it, the study stops when it starts, in one sentence, before any
# data is built. Sized to finish in under 8 minutes on one GPU beside 16 CPUs: 1600 generated
# ImageNet-sized photos, 60 steps per arm; EXTRA adds overrides (EXTRA=data.path=/data/train).
set -euo pipefail
cd "$(dirname "$0")/.."
DEVICE="${1:-gpu}"
OUT="${2:-results/device_check}"
case "$DEVICE" in cpu|gpu|ascend) ;; *)
  echo "error: device '$DEVICE' is not one of cpu, gpu, ascend; run scripts/device_check.sh gpu [OUT]" >&2
  exit 2 ;;
esac
[ -x .venv/bin/snakemake ] || { echo "error: .venv is missing; run make setup first" >&2; exit 2; }
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
OVERRIDES="size=paper,device=$DEVICE,data.num_images=1600,trainer.steps=60${EXTRA:+,$EXTRA}"
export MLFLOW_TRACKING_URI="sqlite:///$OUT/mlflow.db"
echo "device_check: device=$DEVICE, results and MLflow store under $OUT"
# its own working folder (-d): Snakemake's lock and metadata beside the results, not in the checkout
.venv/bin/snakemake -s Snakefile -d "$OUT" --cores all ${DRY_RUN:+-n} --config study=device_check \
  "results=$OUT/results" "overrides=[$OVERRIDES]"
if [ -z "${DRY_RUN:-}" ]; then
  .venv/bin/python - "$OUT" <<'PY'
import json, sys
from pathlib import Path
card = json.loads((Path(sys.argv[1]) / "results/report/device_check/scorecard.json").read_text())
print(card["headline"])
PY
  echo "device_check: bring back $OUT (report: results/report/device_check/report.html; MLflow: mlflow.db)"
fi
