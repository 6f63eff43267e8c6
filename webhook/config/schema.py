"""The policy's JSON Schema (`policy.schema.json`): the one check of a policy's structure (every field's type,
values and shape, and the cross-field rules a schema can say). The loader validates every document with it before
the few checks a schema cannot express, the Helm chart's values.schema.json embeds it for `policy:` (written by
`make schema`, tested equal), and editors read it through the `# yaml-language-server: $schema=` line of the
shipped default.

A null field is absent, as Helm and the loader read it, except where null means something (a security default
not set) or where it is a value the schema refuses (a rule's action, a node label's value); a key that may not be
there at all (unknown, or a field of the other mechanism) is refused whatever its value.

Errors are worded as the loader words its own (`cohorts[0].mechanism: must be one of device-plugin,
dra, not 'mig'`): from the keyword that failed, or from the schema's `x-error` (any keyword),
`x-error-<keyword>` and `x-error-key` (the value is a mapping's key, checked by propertyNames)
annotations, `x-what` naming what a pattern describes, and `x-at` reporting a cross-field error at the
field a person would fix. Validators ignore `x-` keywords."""
from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

import jsonschema

from webhook.rules import Rule

SCHEMA_PATH = Path(__file__).with_name("policy.schema.json")
SCHEMA_URL = "https://raw.githubusercontent.com/gpu-admission/gpu-admission/main/webhook/config/policy.schema.json"
# Keys whose null means something: a security default not set, or a value of a mapping whose keys are data (a
# rule's action, a node label, a MIG profile's count, a resource's allocatable), which the schema refuses. Elsewhere
# a field's null is "absent", as the loader and Helm read it.
_NULL_KEEPING = ("securityDefaults", "rules", "nodeLabels", "profiles", "allocatable")
_TYPE_NAMES = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "a boolean",
               "array": "a list", "object": "a mapping", "null": "null"}


@functools.lru_cache(maxsize=1)
def policy_schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


# An integer is an int, as YAML and Python read one: 2.0 is a number, not a count of anything.
_Validator = jsonschema.validators.extend(jsonschema.Draft7Validator, type_checker=jsonschema.Draft7Validator
                                          .TYPE_CHECKER.redefine("integer", lambda _, v: type(v) is int))


@functools.lru_cache(maxsize=1)
def _validator() -> jsonschema.protocols.Validator:
    return _Validator(policy_schema())  # compiled once: the suite loads policies thousands of times


def without_nulls(data: Any, keep: bool = False) -> Any:
    """`data` with each null field dropped (absent), but under the keys whose null means something."""
    if isinstance(data, dict):
        return {k: without_nulls(v, keep or k in _NULL_KEEPING) for k, v in data.items() if keep or v is not None}
    if isinstance(data, list):
        return [without_nulls(v, keep) for v in data]
    return data


def _presence(error: jsonschema.ValidationError) -> bool:
    """An error about a key being there at all (unknown, or a field of the other mechanism): null or not."""
    return (error.validator == "additionalProperties" and error.validator_value is False) or (
        error.validator == "not" and error.validator_value == {})


def _where(path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def type_of(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list",
            dict: "a mapping"}.get(type(value), type(value).__name__)


def _type_name(types: Any) -> str:
    names = [_TYPE_NAMES.get(t, t) for t in ([types] if isinstance(types, str) else types) if t != "null"]
    return " or ".join(names)


def _format(template: str, value: Any) -> str:
    try:
        return template.format(value=value, instance=value)
    except (KeyError, IndexError, TypeError, ValueError):
        return template


def _messages(error: jsonschema.ValidationError) -> list[tuple[list, str]]:
    """(path, message) pairs for one schema error, in the loader's words."""
    schema = error.schema if isinstance(error.schema, dict) else {}
    path = list(error.absolute_path)
    value = error.instance
    keyword = error.validator
    if keyword in ("anyOf", "oneOf") and isinstance(value, dict) and not schema.get(f"x-error-{keyword}"):
        # The mapping branch of "an action or a mapping": its own errors say more than "none matched".
        branches = _object_branches(schema, keyword)
        nested = [e for e in error.context or () if e.relative_schema_path and e.relative_schema_path[0] in branches]
        if nested:
            return [m for e in nested for m in _messages(e)]
    if keyword == "additionalProperties" and isinstance(value, dict) and schema.get("additionalProperties") is False:
        known = set(schema.get("properties", {}))
        return [(path + [k], "unknown field") for k in sorted(set(value) - known, key=str)]
    if (keyword == "required" and isinstance(value, dict)
            and not (schema.get("x-error") or schema.get("x-error-required"))):
        return [(path + [k], "is required") for k in error.validator_value if k not in value]
    if len(error.schema_path) >= 2 and list(error.schema_path)[-2] == "propertyNames":
        # A key is the offender (propertyNames checks each key as the instance): at the key's own path.
        text = schema.get("x-error-key") or schema.get("x-error") or (
            f"{value!r} is not a valid {schema['x-what']}" if "x-what" in schema else error.message)
        return [(path + [value], _format(text, value))]
    template = schema.get(f"x-error-{keyword}") or schema.get("x-error")
    at = schema.get("x-at")
    if at:
        path = path + [at] if isinstance(value, dict) else path[:-1] + [at]
    if template:
        return [(path, _format(template, value))]
    if keyword == "type":
        return [(path, f"must be {_type_name(error.validator_value)}, not {type_of(value)}")]
    if keyword in ("enum", "const"):
        choices = error.validator_value if keyword == "enum" else [error.validator_value]
        return [(path, f"must be one of {', '.join(str(c) for c in choices if c is not None)}, not {value!r}")]
    if keyword == "minimum":
        return [(path, f"must be >= {error.validator_value}")]
    if keyword == "maximum":
        return [(path, f"must be <= {error.validator_value}")]
    if keyword == "exclusiveMinimum":
        return [(path, f"must be > {error.validator_value}")]
    if keyword == "pattern" and "x-what" in schema:
        return [(path, f"{value!r} is not a valid {schema['x-what']}")]
    if keyword == "minLength" and error.validator_value == 1:
        return [(path, "must be a non-empty string")]
    if keyword == "minItems":
        return [(path, f"must list at least {error.validator_value}")]
    return [(path, error.message.replace("\n", " "))]


def _object_branches(schema: dict, keyword: str) -> set[int]:
    return {i for i, branch in enumerate(schema.get(keyword) or ()) if isinstance(branch, dict)
            and branch.get("type") == "object"}


def schema_errors(data: Any) -> list[str]:
    """`field.path: reason` for each way `data` breaks the schema, sorted by field (a stable order)."""
    found: dict[str, None] = {}
    document = without_nulls(data)
    errors = list(_validator().iter_errors(document))
    if document != data:  # a null field is absent, but a key that may not be there is refused with any value
        errors += [e for e in _validator().iter_errors(data) if _presence(e)]
    for error in errors:
        for path, message in _messages(error):
            found[f"{_where(path) or 'policy'}: {message}"] = None
    return sorted(found, key=lambda e: e.split(": ", 1)[0])


# ---------------------------------------------------------------- the chart's values.schema.json

def chart_values_schema(values_schema: dict) -> dict:
    """The chart's values schema with `policy:` this schema and the policy's definitions (which the
    chart's convenience values share) in its own."""
    policy = copy.deepcopy(policy_schema())
    definitions = policy.pop("definitions")
    for key in ("$schema", "$id", "title"):
        policy.pop(key, None)
    policy["description"] = f"The policy document (docs/configuration.md), by {SCHEMA_URL}"
    out = copy.deepcopy(values_schema)
    out["definitions"] = {**out.get("definitions", {}), **definitions}
    out["properties"]["policy"] = policy
    return out


def rule_id_schema() -> dict[str, Any]:
    """The schema's one list of rule ids (`definitions.ruleId`, which every rule-id field refers to), from
    webhook/rules.py."""
    ids = [r.value for r in Rule]
    return {"description": "a rule id (webhook/rules.py; written by make schema)", "enum": ids,
            "x-error": "unknown rule {value!r}", "x-error-key": f"unknown rule; rules are {', '.join(ids)}"}


def main(argv: list[str]) -> int:
    """Rewrite the policy schema's rule ids from webhook/rules.py, and the chart's values.schema.json (the
    path given) with this schema embedded."""
    (path,) = argv
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    if schema["definitions"].get("ruleId") != rule_id_schema():
        schema["definitions"]["ruleId"] = rule_id_schema()
        SCHEMA_PATH.write_text(json.dumps(schema, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        policy_schema.cache_clear()
    target = Path(path)
    current = json.loads(target.read_text(encoding="utf-8"))
    target.write_text(json.dumps(chart_values_schema(current), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0

