"""Typed records: one writer, one reader, a schema version that is checked, published schemas."""

import json
from dataclasses import replace

import jsonschema
import pytest
from conftest import REPO
from records import make_summary

from perfstudy.common.records import RecordError, from_dict, read_record, schema_text, to_dict, write_record
from perfstudy.decide.diagnosis import Diagnosis, read_diagnosis, write_diagnosis
from perfstudy.decide.remedy_proof import Remedies
from perfstudy.decide.scorecard import Scorecard
from perfstudy.run.summary import RunSummary, read_summary, write_summary

SCHEMAS = REPO / "docs" / "schemas"
FIXTURES = REPO / "tests" / "fixtures" / "cpu_demo"


@pytest.mark.parametrize("name, cls", [("summary.schema.json", RunSummary),
                                       ("diagnosis.schema.json", Diagnosis),
                                       ("scorecard.schema.json", Scorecard),
                                       ("prepared.schema.json", Remedies)])
def test_the_published_schemas_are_the_records_own(name, cls):
    published = (SCHEMAS / name).read_text()
    made = schema_text(cls, f"https://perfstudy.invalid/schemas/{name}")
    assert published == made, "docs/schemas is stale: run `make schemas` (and bump SCHEMA_VERSION)"


def test_a_real_diagnosis_validates_and_reads_back_the_same(analysed, tmp_path):
    data = json.loads((analysed / "baseline" / "diagnosis.json").read_text())
    jsonschema.validate(data, json.loads((SCHEMAS / "diagnosis.schema.json").read_text()))
    diagnosis = read_diagnosis(analysed / "baseline")
    assert diagnosis.recommendation.culprit_key == data["recommendation"]["culprit_key"]
    write_diagnosis(tmp_path, diagnosis)
    assert json.loads((tmp_path / "diagnosis.json").read_text()) == data
    (tmp_path / "diagnosis.json").write_text(json.dumps({**data, "schema_version": 0}))
    with pytest.raises(RecordError, match="--forcerun analyze"):
        read_diagnosis(tmp_path)


@pytest.mark.parametrize("arm", ["baseline", "tuned"])
def test_real_summaries_validate_and_read_back_the_same(arm, tmp_path):
    data = json.loads((FIXTURES / arm / "summary.json").read_text())
    jsonschema.validate(data, json.loads((SCHEMAS / "summary.schema.json").read_text()))
    summary = read_summary(FIXTURES / arm)
    assert summary.step_ms.median == data["step_ms"]["median"]
    assert summary.num_parallel_workers.cpu_count == data["num_parallel_workers"]["cpu_count"]
    write_summary(tmp_path, summary)
    assert json.loads((tmp_path / "summary.json").read_text()) == data  # nothing lost or added


def test_a_summary_of_another_version_is_refused_with_the_way_to_remake_it(tmp_path):
    data = to_dict(make_summary())
    current = RunSummary.SCHEMA_VERSION
    for version, said in ((None, "no schema_version"), (current - 1, f"schema_version {current - 1}"),
                          (current + 1, f"schema_version {current + 1}")):
        body = {k: v for k, v in data.items() if k != "schema_version"}
        if version is not None:
            body["schema_version"] = version
        (tmp_path / "summary.json").write_text(json.dumps(body))
        with pytest.raises(RecordError) as err:
            read_summary(tmp_path)
        text = str(err.value)
        assert said in text and f"this code reads schema_version {current}" in text
        assert str(tmp_path / "summary.json") in text and "--forcerun train" in text
        assert "\n" not in text


def test_a_missing_or_unknown_field_is_refused_not_guessed(tmp_path):
    data = to_dict(make_summary())
    with pytest.raises(RecordError, match="lacks the field 'steady_step_ms'"):
        from_dict(RunSummary, {k: v for k, v in data.items() if k != "steady_step_ms"})
    with pytest.raises(RecordError, match=r"fields \['buffered_batches'\]"):
        from_dict(RunSummary, {**data, "buffered_batches": 3})
    with pytest.raises(RecordError, match="step_ms should be an object"):
        from_dict(RunSummary, {**data, "step_ms": 3.0})


def test_optional_fields_default_and_records_round_trip(tmp_path):
    summary = replace(make_summary(), verification=None, profiled_window=None)
    path = write_record(tmp_path / "s.json", summary)
    assert read_record(path, RunSummary) == summary
    data = to_dict(summary)
    del data["verification"]  # optional: has a default
    assert from_dict(RunSummary, data).verification is None
    jsonschema.validate(to_dict(summary), json.loads((SCHEMAS / "summary.schema.json").read_text()))


def test_a_share_is_written_one_way():
    from perfstudy.common.thresholds import GAIN_THAT_MATTERS, pct

    assert pct(GAIN_THAT_MATTERS) == "10 %" and pct(0.0525, 1) == "5.2 %"
    assert pct(-0.052, signed=True) == "-5 %" and pct(0.3, signed=True) == "+30 %"
    assert pct(None) == "-" and pct(float("nan")) == "-"


def test_a_record_its_reader_would_refuse_fails_where_it_is_written(tmp_path):
    from records import make_diagnosis

    from perfstudy.decide.diagnosis import write_diagnosis

    write_diagnosis(tmp_path, replace(make_diagnosis(), culprit=None))  # no culprit: allowed
    assert read_diagnosis(tmp_path).culprit is None
    with pytest.raises(RecordError, match="input_bound is null"):
        write_diagnosis(tmp_path / "bad", replace(make_diagnosis(), input_bound=None))
    assert not (tmp_path / "bad" / "diagnosis.json").exists()  # nothing half-written
