"""Typed records that cross a stage: written to JSON in one place, read back in one place.

A record is a frozen dataclass whose class carries `SCHEMA_VERSION` (bumped when a field is
renamed, removed or changes meaning), `KIND` (what the file is, for messages) and `RERUN`
(how a user remakes a file of another version). Each field documents itself with `doc()`;
the same text becomes the field's description in the published JSON Schema
(`json_schema`, docs/schemas/). `read_record` refuses a file of another schema version with
one sentence that says how to make it again; it never guesses at a missing field: what may
be missing is typed `X | None` with a default.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

from perfstudy.common.io import read_json, write_json

SCHEMA_KEY = "schema_version"
R = TypeVar("R")


class RecordError(ValueError):
    """A record file that this code cannot read (another schema version, a missing or wrong
    field); the message names the file and what to do."""


def doc(text: str, default: Any = dataclasses.MISSING, default_factory: Any = dataclasses.MISSING):
    """A dataclass field with its description (the JSON Schema's `description`)."""
    return dataclasses.field(default=default, default_factory=default_factory,
                             metadata={"doc": text})


def to_dict(record: Any) -> dict[str, Any]:
    """The record as JSON-ready data, `schema_version` first (nested records as objects)."""
    body = dataclasses.asdict(record)
    version = getattr(type(record), "SCHEMA_VERSION", None)
    return {SCHEMA_KEY: version, **body} if version is not None else body


def write_record(path: str | Path, record: Any) -> Path:
    """Write a record as JSON with its schema version; returns the path. It is read back first
    (from_dict), so a record its own reader would refuse fails here, where it is made."""
    data = to_dict(record)
    from_dict(type(record), json.loads(json.dumps(data, default=str)), where=f"{path} (being written)")
    return write_json(path, data)


def read_record(path: str | Path, cls: type[R]) -> R:
    """Read `path` as a `cls` record: its schema version must be this code's, its fields the
    record's; anything else raises RecordError with the way to remake the file."""
    data = read_json(path)
    return from_dict(cls, data, where=str(path))


def from_dict(cls: type[R], data: dict[str, Any], where: str = "a record") -> R:
    """Build a `cls` record from JSON data (the inverse of to_dict), checking the version."""
    if not isinstance(data, dict):
        raise RecordError(f"{where} is not a JSON object; {getattr(cls, 'RERUN', 'remake it')}.")
    version = getattr(cls, "SCHEMA_VERSION", None)
    if version is not None:
        found = data.get(SCHEMA_KEY)
        if found != version:
            said = "no schema_version (it was written before records were versioned)" \
                if found is None else f"schema_version {found}"
            raise RecordError(f"{where} is a {cls.KIND} with {said}, and this code reads "
                              f"schema_version {version}; {cls.RERUN}.")
    return _build(cls, {k: v for k, v in data.items() if k != SCHEMA_KEY}, where)


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _build(cls: type, data: dict[str, Any], where: str) -> Any:
    hints = _hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise RecordError(f"{where} has fields {unknown} that a {cls.__name__} does not know; "
                          f"{getattr(cls, 'RERUN', 'remake it with this code')}.")
    values = {}
    for field in dataclasses.fields(cls):
        if field.name in data:
            values[field.name] = _value(hints[field.name], data[field.name],
                                        f"{where}: {field.name}")
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise RecordError(f"{where} lacks the field {field.name!r} of a {cls.__name__}; "
                              f"{getattr(cls, 'RERUN', 'remake it with this code')}.")
    return cls(**values)


def _value(hint: Any, value: Any, where: str) -> Any:
    """`value` read as `hint`: nested records built, lists and dicts of them too."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return None
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        return _value(options[0], value, where) if len(options) == 1 else value
    if value is None and hint is not Any:  # None is only what `X | None` allows (above)
        raise RecordError(f"{where} is null, which its type ({_name(hint)}) does not allow; "
                          "the code that made the record has a bug: please report it.")
    if dataclasses.is_dataclass(hint):
        if isinstance(value, hint):  # already built (a record made in code, not read back)
            return value
        if not isinstance(value, dict):
            raise RecordError(f"{where} should be an object, not {value!r}.")
        return _build(hint, value, where)
    if origin is list and typing.get_args(hint):
        return [_value(typing.get_args(hint)[0], v, where) for v in value]
    if origin is tuple and typing.get_args(hint):
        return tuple(value)
    if origin is dict and len(typing.get_args(hint)) == 2:
        inner = typing.get_args(hint)[1]
        return {k: _value(inner, v, where) for k, v in value.items()}
    return value


def _name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint)


# --- JSON Schema (draft 2020-12) of a record, from its type hints and field docs -------------

_SCALARS = {str: {"type": "string"}, int: {"type": "integer"}, float: {"type": "number"},
            bool: {"type": "boolean"}, Any: {}, object: {}}


def _schema_of(hint: Any, defs: dict[str, Any]) -> dict[str, Any]:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_schema_of(a, defs) for a in typing.get_args(hint)]}
    if hint is type(None):
        return {"type": "null"}
    if dataclasses.is_dataclass(hint):
        if hint.__name__ not in defs:
            defs[hint.__name__] = {}  # a placeholder: a record that refers to itself
            defs[hint.__name__] = _object_schema(hint, defs)
        return {"$ref": f"#/$defs/{hint.__name__}"}
    if origin in (list, tuple):
        args = typing.get_args(hint)
        return {"type": "array", **({"items": _schema_of(args[0], defs)} if args else {})}
    if origin is dict or hint is dict:
        args = typing.get_args(hint)
        extra = _schema_of(args[1], defs) if len(args) == 2 else {}
        return {"type": "object", **({"additionalProperties": extra} if extra else {})}
    if origin is typing.Literal:
        return {"enum": list(typing.get_args(hint))}
    if hint is float:  # JSON writes a whole float as an integer: both are numbers
        return {"type": "number"}
    return dict(_SCALARS.get(hint, {}))


def _object_schema(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    hints = _hints(cls)
    props, required = {}, []
    for field in dataclasses.fields(cls):
        prop = _schema_of(hints[field.name], defs)
        if field.metadata.get("doc"):
            prop = {"description": field.metadata["doc"], **prop}
        props[field.name] = prop
        if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            required.append(field.name)
    return {"type": "object", "description": (cls.__doc__ or "").strip().split("\n\n")[0],
            "properties": props, "required": required, "additionalProperties": False}


def json_schema(cls: type, schema_id: str) -> dict[str, Any]:
    """The JSON Schema of a versioned record class, as published under docs/schemas/."""
    defs: dict[str, Any] = {}
    body = _object_schema(cls, defs)
    body["properties"] = {SCHEMA_KEY: {"description": "the record's schema version; a reader "
                                       "refuses any other", "const": cls.SCHEMA_VERSION},
                          **body["properties"]}
    body["required"] = [SCHEMA_KEY, *body["required"]]
    out = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": schema_id,
           "title": f"{cls.KIND} (schema_version {cls.SCHEMA_VERSION})", **body}
    if defs:
        out["$defs"] = dict(sorted(defs.items()))
    return out


def schema_text(cls: type, schema_id: str) -> str:
    """json_schema as the text written to docs/schemas/ (stable key order, a final newline)."""
    return json.dumps(json_schema(cls, schema_id), indent=2) + "\n"
