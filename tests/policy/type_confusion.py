"""Type confusion over the manifests of the suite: every field of every Kubernetes object under tests/data replaced
by a value of each other JSON type (null, boolean, number, string, array, object), judged as a CREATE and as an
UPDATE of the original. The apiserver never sends such shapes for the types it knows, but custom resources, a
`check` of a hand-written file and a future API version can: a check that raises is skipped by its `onError`,
so every check must read fields through the tolerant accessors of webhook/objects/access.py.

    python -m tests.policy.type_confusion      # the whole sweep (every field, every other type): its counts

tests/policy/test_type_confusion.py samples the same space with hypothesis on every `make test`."""
from __future__ import annotations

import copy
import itertools
import sys
import time
from collections.abc import Iterator
from functools import cache
from typing import Any

import yaml

from tests.support import DATA
from webhook.config import default_policy
from webhook.evaluation import evaluate_object
from webhook.lookups.bundle import BundleResolver

Path_ = tuple[Any, ...]
# One value of each JSON type. A number stands for both int and float: the checks accept either where a
# number belongs, so swapping one for the other is no confusion.
CONFUSIONS: tuple[Any, ...] = (None, True, 7, "x", ["x"], {"x": "y"})
POLICY = default_policy()


def _json_type(value: Any) -> str:
    if value is None or type(value) is bool or type(value) is str:
        return type(value).__name__
    if type(value) in (int, float):
        return "number"
    return "array" if type(value) is list else "object"


@cache
def corpus() -> tuple[tuple[str, dict[str, Any]], ...]:
    """(file relative to tests/data, object) for every Kubernetes object the suite holds, CRDs aside (a
    CustomResourceDefinition is never admitted: the webhook's rules do not match it)."""
    found = []
    for path in sorted(itertools.chain(DATA.rglob("*.yaml"), DATA.rglob("*.yml"), DATA.rglob("*.json"))):
        try:
            documents = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
        except (yaml.YAMLError, UnicodeDecodeError):
            continue  # a Helm template or other non-YAML text
        for doc in documents:
            if (type(doc) is dict and type(doc.get("kind")) is str and "apiVersion" in doc
                    and doc["kind"] != "CustomResourceDefinition"):
                found.append((str(path.relative_to(DATA)), doc))
    return tuple(found)


def field_paths(obj: Any, prefix: Path_ = ()) -> Iterator[Path_]:
    """Every field's path, containers before what they hold (the object itself excluded)."""
    items = obj.items() if type(obj) is dict else enumerate(obj) if type(obj) is list else ()
    for key, value in items:
        yield (*prefix, key)
        yield from field_paths(value, (*prefix, key))


def value_at(obj: Any, path: Path_) -> Any:
    for key in path:
        obj = obj[key]
    return obj


def confused(obj: dict[str, Any], path: Path_, value: Any) -> dict[str, Any]:
    """A copy of `obj` with the field at `path` replaced by `value`."""
    out = copy.deepcopy(obj)
    value_at(out, path[:-1])[path[-1]] = value
    return out


def confusions(current: Any) -> tuple[Any, ...]:
    return tuple(v for v in CONFUSIONS if _json_type(v) != _json_type(current))


def failure(source: str, obj: dict[str, Any], operation: str, original: dict[str, Any]) -> str | None:
    """None when the evaluation ends with no check raising; otherwise what raised, in one line."""
    documents = [doc for name, doc in corpus() if name == source and doc is not original]
    resolver = BundleResolver([obj, *documents])
    try:
        ev = evaluate_object(obj, policy=POLICY, resolver=resolver, operation=operation,
                             old=original if operation == "UPDATE" else None)
    except Exception as error:  # the property under test: nothing escapes
        return f"raised {error!r}"
    return "; ".join(f"{e.rule.value}: {e.error}" for e in ev.errors) or None


def sweep() -> int:
    started, reviews, failures = time.process_time(), 0, {}
    for source, original in corpus():
        for path in field_paths(original):
            for value in confusions(value_at(original, path)):
                obj = confused(original, path, value)
                for operation in ("CREATE", "UPDATE"):
                    reviews += 1
                    what = failure(source, obj, operation, original)
                    if what is not None:
                        failures.setdefault(what, (source, path, value, operation))
    print(f"{len(corpus())} objects, {reviews} reviews, {len(failures)} distinct failures, "
          f"{time.process_time() - started:.0f} s CPU")
    for what, (source, path, value, operation) in failures.items():
        print(f"{what}\n    {source} {'.'.join(map(str, path))} = {value!r} ({operation})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(sweep())
