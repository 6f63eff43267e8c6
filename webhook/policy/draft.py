"""Copy-on-write editing: a mutation returns a new object that shares every untouched subtree with the
original, so the patch diff can skip shared subtrees by identity and no deep copy is ever made."""
from __future__ import annotations


class Draft:
    def __init__(self, original: dict):
        self.root = original
        self._own: set[int] = set()  # ids of containers this draft created (safe to edit in place)

    @property
    def changed(self) -> bool:
        return bool(self._own)

    def _copy(self, node):
        copy = dict(node) if type(node) is dict else list(node)
        self._own.add(id(copy))
        return copy

    def node(self, *path, create: type = dict):
        """The container at `path`, copied along the way; created empty (of type `create`) where absent
        or not of a container type."""
        if id(self.root) not in self._own:
            self.root = self._copy(self.root)
        node = self.root
        for i, key in enumerate(path):
            child = node[key] if (type(node) is dict and key in node) or (type(node) is list and key < len(node)) else None
            want = create if i == len(path) - 1 else (list if type(path[i + 1]) is int else dict)
            if type(child) is not want:
                child = want()
                self._own.add(id(child))
            elif id(child) not in self._own:
                child = self._copy(child)
            node[key] = child
            node = child
        return node
