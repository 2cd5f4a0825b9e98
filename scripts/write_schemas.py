#!/usr/bin/env python
"""Write the JSON Schemas of the typed records to docs/schemas/ (made from the record classes;
tests/unit/common/test_records.py fails when a published file differs from its class).

    python scripts/write_schemas.py
"""

import sys
from pathlib import Path

from perfstudy.common.io import write_text_atomic
from perfstudy.common.records import schema_text
from perfstudy.decide.diagnosis import Diagnosis
from perfstudy.decide.remedy_proof import Remedies
from perfstudy.decide.scorecard import Scorecard
from perfstudy.run.summary import RunSummary

DOCS = Path(__file__).resolve().parents[1] / "docs" / "schemas"
BASE = "https://perfstudy.invalid/schemas/"
RECORDS = {"summary.schema.json": RunSummary, "diagnosis.schema.json": Diagnosis,
           "scorecard.schema.json": Scorecard, "prepared.schema.json": Remedies}


def main() -> None:
    for name, cls in RECORDS.items():
        path = write_text_atomic(DOCS / name, schema_text(cls, BASE + name))
        print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
