"""YAML read with libyaml's parser where PyYAML was built with it (faster on large `helm template`
output: bench/yaml_input.py) and the same documents as the pure-Python loader: both type scalars with the
same Python resolver. A document that does not parse is read again by the pure-Python loader, so that
errors, and the documents before them, are reported as they always were."""
from __future__ import annotations

from typing import Any

import yaml

FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_all(text: str) -> tuple[list[Any], yaml.YAMLError | None]:
    """Every document of `text`, and the error that stopped the reading (None when it read to the end)."""
    try:
        return list(yaml.load_all(text, Loader=FAST_LOADER)), None
    except yaml.YAMLError:
        pass
    documents: list[Any] = []
    try:
        for doc in yaml.load_all(text, Loader=yaml.SafeLoader):
            documents.append(doc)
    except yaml.YAMLError as exc:
        return documents, exc
    return documents, None


def load(text: str) -> Any:
    """One document, as `yaml.safe_load` reads it; raises yaml.YAMLError."""
    try:
        return yaml.load(text, Loader=FAST_LOADER)
    except yaml.YAMLError:
        return yaml.safe_load(text)
