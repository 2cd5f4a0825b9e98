"""A study's claims file: where it is, and read through its JSON Schema
(docs/schemas/claims.schema.json) into one sentence per problem."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from perfstudy.common.config import ConfigError
from perfstudy.common.provenance import REPO_ROOT

SCHEMA = REPO_ROOT / "docs" / "schemas" / "claims.schema.json"


def _problem(error, schema: dict[str, Any]) -> str:
    """One jsonschema error as the part of a sentence that says what is wrong and the fix."""
    props = schema["$defs"]["claim"]["properties"]
    if error.validator == "required":
        key = error.message.split("'")[1]
        if key in ("against", "truth"):
            return f"needs `{key}:` ({props[key]['description']})"
        return f"has no `{key}`; add it"
    if error.validator == "additionalProperties":
        known = set(error.schema.get("properties", {}))
        unknown = sorted(set(error.instance) - known)
        return f"has unknown key(s) {unknown}; the keys are {sorted(known)}"
    if error.validator == "anyOf":
        return "has no bound; add at_least, at_most or equals"
    field = error.path[-1] if error.path else None
    if field == "metric":
        return f"has unknown metric {error.instance!r}; use one of {sorted(props['metric']['enum'])}"
    if field in ("at_least", "at_most"):
        return (f"has {field}: {error.instance!r}, not a number; write a number (shares and "
                "errors as fractions, e.g. 0.5)")
    if field is not None:
        wanted = props.get(field, {}).get("description", error.message)
        return f"has {field}: {error.instance!r}, which should be {wanted}"
    return error.message


def load(path: str | Path) -> dict[str, Any]:
    """The claims file, validated by its JSON Schema (docs/schemas/claims.schema.json); any
    problem is one ConfigError sentence naming the file, the claim and the fix."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ConfigError(f"The claims file {path} cannot be read ({exc.strerror}); fix the "
                          "study's `claims:` path or remove it.") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"The claims file {path} is not valid YAML ({str(exc).splitlines()[0]}); "
                          "fix it.") from None
    if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
        raise ConfigError(f"The claims file {path} needs a `claims:` list; see workflow/claims/"
                          "seed_case.yaml for the format.")
    schema = json.loads(SCHEMA.read_text())
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(data))
    if error is not None:
        where = f"The claims file {path}"
        if len(error.path) >= 2 and error.path[0] == "claims":
            claim = data["claims"][error.path[1]]
            name = claim.get("id") if isinstance(claim, dict) else None
            where = f"The claim {name or error.path[1] + 1!r} of {path}"
            if not isinstance(claim, dict):
                raise ConfigError(f"{where} is not a mapping; write it as `- id: ..., metric: ...`.")
        raise ConfigError(f"{where} {_problem(error, schema)}.")
    ids = [c["id"] for c in data["claims"]]
    repeated = sorted({i for i in ids if ids.count(i) > 1})  # beyond what a JSON Schema says
    if repeated:
        raise ConfigError(f"The claims file {path} repeats the id(s) {repeated}; give each claim "
                          "its own.")
    return data


def claims_path(study: str, configured: str | None, workflow_dir: str | Path) -> Path | None:
    """The study's claims file: its `claims:` key (relative to the workflow folder), else
    workflow/claims/<study>.yaml when it exists, else None (no scorecard)."""
    if configured:
        return Path(workflow_dir) / configured
    default = Path(workflow_dir) / "workflow" / "claims" / f"{study}.yaml"
    return default if default.is_file() else None
