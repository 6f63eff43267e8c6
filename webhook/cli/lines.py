"""The line of a field in a manifest file, for the CI formats (SARIF regions, GitHub annotations).

A field path as the rules write it (`spec.containers[0].env[1]`, keys with dots such as
`metadata.annotations.cdi.k8s.io/devices` included) is walked down the YAML node tree, which keeps
each node's start mark; the line is that of the deepest node the path reaches. Only the CLI does
this, once per file, after the evaluation: the webhook's path never composes node trees."""
from __future__ import annotations

import re

import yaml

from webhook.yamlread import FAST_LOADER

_INDEX = re.compile(r"\[(\d+)\]")
_HELM_SOURCE = re.compile(r"^# Source: (\S.*?)\s*$")
_QUOTED = re.compile(r'\[["\']([^"\']*)["\']\]')


class LineFinder:
    """Node trees of one file's documents, composed on first use."""

    def __init__(self, text: str):
        self._text = text
        self._documents: list[yaml.Node | None] | None = None

    def _trees(self) -> list[yaml.Node | None]:
        if self._documents is None:
            try:
                self._documents = list(yaml.compose_all(self._text, Loader=FAST_LOADER))
            except yaml.YAMLError:
                self._documents = []  # the reader reported it; no line then
        return self._documents

    def helm_source(self, document: int) -> str | None:
        """The template a document of `helm template` output came from (its `# Source:` comment)."""
        trees = self._trees()
        tree = trees[document - 1] if 0 < document <= len(trees) else None
        if tree is None:
            return None
        lines = self._text.splitlines()
        # Back over the comments, blank lines and separators before the document (an empty document
        # between two separators included), to the nearest `# Source:`.
        for number in range(tree.start_mark.line - 1, -1, -1):
            text = lines[number]
            m = _HELM_SOURCE.match(text)
            if m:
                return m.group(1)
            if text.strip() and not text.startswith(("#", "---")):
                return None
        return None

    def line(self, document: int, path: str, item: int | None = None) -> int | None:
        """1-based line of `path` in the `document`-th document (1-based, as `Document.index`), in
        the `item`-th element of its `items` when it is a List; None when the document is unknown."""
        trees = self._trees()
        if not 0 < document <= len(trees) or trees[document - 1] is None:
            return None
        node = trees[document - 1]
        if item is not None:
            items = _child(node, "items")
            node = items.value[item] if isinstance(items, yaml.SequenceNode) and item < len(items.value) else node
        return _walk(node, path) + 1


def _child(node: yaml.Node, key: str) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == key:
                return v
    return None


def _entry(node: yaml.MappingNode, key: str) -> tuple[yaml.Node, yaml.Node] | None:
    for k, v in node.value:
        if isinstance(k, yaml.ScalarNode) and k.value == key:
            return k, v
    return None


def _walk(node: yaml.Node, path: str) -> int:
    """The 0-based line of the deepest node along `path` (of its key, for a mapping's value): where
    the path leaves the document (a field a mutation would add, say), its nearest ancestor's."""
    rest = path
    line = node.start_mark.line
    while rest:
        rest = rest.lstrip(".")
        if not rest:
            break
        if isinstance(node, yaml.SequenceNode):
            m = _INDEX.match(rest)
            if not m or int(m.group(1)) >= len(node.value):
                return line
            node, rest = node.value[int(m.group(1))], rest[m.end():]
            line = node.start_mark.line
            continue
        if not isinstance(node, yaml.MappingNode):
            return line
        m = _QUOTED.match(rest)
        if m:
            found, rest = _entry(node, m.group(1)), rest[m.end():]
        else:
            # The longest key that the path starts with and that ends where a segment ends: label,
            # annotation and resource names hold dots themselves.
            best = None
            for k, v in node.value:
                key = k.value if isinstance(k, yaml.ScalarNode) else None
                if key and rest.startswith(key) and rest[len(key):len(key) + 1] in ("", ".", "[") and (
                        best is None or len(key) > len(best[0])):
                    best = (key, (k, v))
            found, rest = (best[1], rest[len(best[0]):]) if best else (None, rest)
        if found is None:
            return line
        line, node = found[0].start_mark.line, found[1]
    return line
