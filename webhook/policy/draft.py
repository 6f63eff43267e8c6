"""Copy-on-write editing: a mutation returns a new object that shares every untouched subtree with the
original, so the patch diff can skip shared subtrees by identity and no deep copy is ever made."""
from __future__ import annotations

from typing import Any


class Draft:
    def __init__(self, original: dict[str, Any]) -> None:
        self.root = original
        self._nodes: dict[tuple[str | int, ...], Any] = {}  # path -> the draft's own (copied or new) container

    @property
    def changed(self) -> bool:
        return bool(self._nodes)

    def node(self, *path: str | int, create: Any = dict) -> Any:
        """The draft's own container at `path`, copying each container on the way once; created empty (of
        type `create`) where absent or of another type. Later calls for the same path return the same node."""
        node = self._nodes.get(path)
        return node if node is not None else self._own(path, create)

    def _own(self, path: tuple[str | int, ...], create: Any) -> Any:
        if not path:
            node = self.root = dict(self.root)
        else:
            key: Any = path[-1]
            up = path[:-1]
            parent = self._nodes.get(up)
            if parent is None:
                parent = self._own(up, list if type(key) is int else dict)
            child: Any
            if type(parent) is dict:
                child = parent.get(key)
            else:
                child = parent[key] if key < len(parent) else None
            node = child.copy() if type(child) is create else create()
            if type(parent) is list and key >= len(parent):
                parent.append(node)
            else:
                parent[key] = node
        self._nodes[path] = node
        return node
