"""A small evaluator for the subset of CEL that the chart's matchConditions use, with CEL's semantics
for what matters here: a missing field is an error (not null), `has()` tests presence, `||`/`&&` are
commutative and absorb an error when the other side decides, and `exists` is true when any element
satisfies the predicate even if others error. Enough to evaluate the rendered expressions against real
objects; not a general CEL implementation (no arithmetic, no ternary, no type checking).

It stands in for the kube-apiserver's CEL (cel-go) in the fast suite, where hundreds of objects are compared
with the engine in seconds. The real apiserver evaluating the same matchConditions is tests/e2e: non-GPU Pods
never reach the webhook (its request counter stays still), GPU Pods do, and every value set's
matchConditions compile there (tests/e2e/test_failure.py, tests/e2e/test_chart.py).

Grammar (CEL precedence): or := and ('||' and)* ; and := rel ('&&' rel)* ;
rel := unary (('=='|'!='|'in') unary)? ; unary := '!' unary | member ;
member := primary ('.' IDENT ('(' args ')')? | '[' or ']')* ;
primary := IDENT | IDENT '(' args ')' | STRING | '[' list ']' | '(' or ')'
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_TOKEN = re.compile(r"\s*(?:(\|\||&&|==|!=|[!().,\[\]])|'([^'\\]*)'|([A-Za-z_][A-Za-z0-9_]*))")
MACROS = {"exists", "all"}
METHODS = {"startsWith", "contains", "endsWith"}
VARIABLES = {"object", "oldObject", "request"}


class CelError(Exception):
    """A syntax error in an expression (the apiserver would reject the configuration)."""


@dataclass(frozen=True)
class Err:
    """A CEL runtime error value (e.g. no such key); it propagates unless absorbed."""

    reason: str


def tokenize(text: str) -> list[tuple[str, str]]:
    tokens, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise CelError(f"unexpected character at {pos}: {text[pos:pos + 20]!r}")
        op, string, ident = m.groups()
        if op is not None:
            tokens.append(("op", op))
        elif string is not None:
            tokens.append(("str", string))
        elif ident == "in":
            tokens.append(("op", "in"))
        else:
            tokens.append(("id", ident))
        pos = m.end()
    return tokens


class Parser:
    def __init__(self, text: str):
        self.tokens = tokenize(text)
        self.i = 0

    def peek(self, value: str | None = None):
        if self.i >= len(self.tokens):
            return None
        tok = self.tokens[self.i]
        if value is not None and tok != ("op", value):
            return None
        return tok

    def take(self, value: str):
        if self.peek(value) is None:
            got = self.tokens[self.i] if self.i < len(self.tokens) else "end of expression"
            raise CelError(f"expected {value!r}, got {got!r}")
        self.i += 1

    def parse(self):
        node = self.or_()
        if self.i != len(self.tokens):
            raise CelError(f"unexpected {self.tokens[self.i]!r}")
        return node

    def or_(self):
        node = self.and_()
        while self.peek("||"):
            self.i += 1
            node = ("or", node, self.and_())
        return node

    def and_(self):
        node = self.rel()
        while self.peek("&&"):
            self.i += 1
            node = ("and", node, self.rel())
        return node

    def rel(self):
        node = self.unary()
        for op in ("==", "!=", "in"):
            if self.peek(op):
                self.i += 1
                return (op, node, self.unary())
        return node

    def unary(self):
        if self.peek("!"):
            self.i += 1
            return ("not", self.unary())
        return self.member()

    def args(self):
        out = []
        if not self.peek(")"):
            out.append(self.or_())
            while self.peek(","):
                self.i += 1
                out.append(self.or_())
        self.take(")")
        return out

    def member(self):
        node = self.primary()
        while self.peek(".") or self.peek("["):
            if self.peek("["):
                self.i += 1
                key = self.or_()
                self.take("]")
                node = ("index", node, key)
                continue
            self.i += 1
            kind, name = self.tokens[self.i]
            if kind != "id":
                raise CelError(f"expected a field name after '.', got {name!r}")
            self.i += 1
            if self.peek("("):
                self.i += 1
                args = self.args()
                if name in MACROS:
                    if len(args) != 2 or args[0][0] != "var":
                        raise CelError(f"{name}() takes a variable and a predicate")
                    node = (name, node, args[0][1], args[1])
                elif name in METHODS:
                    if len(args) != 1:
                        raise CelError(f"{name}() takes one argument")
                    node = ("method", name, node, args[0])
                else:
                    raise CelError(f"unknown function {name}()")
            else:
                node = ("select", node, name)
        return node

    def primary(self):
        tok = self.peek()
        if tok is None:
            raise CelError("unexpected end of expression")
        kind, value = tok
        self.i += 1
        if kind == "str":
            return ("lit", value)
        if kind == "id":
            if value == "has" and self.peek("("):
                self.i += 1
                arg = self.or_()
                self.take(")")
                if arg[0] != "select":
                    raise CelError("has() takes a field selection")
                return ("has", arg)
            if value in ("true", "false"):
                return ("lit", value == "true")
            if value == "null":
                return ("lit", None)
            return ("var", value)
        if value == "(":
            node = self.or_()
            self.take(")")
            return node
        if value == "[":
            items = []
            if not self.peek("]"):
                items.append(self.or_())
                while self.peek(","):
                    self.i += 1
                    items.append(self.or_())
            self.take("]")
            return ("list", items)
        raise CelError(f"unexpected {value!r}")


def free_variables(node, bound=frozenset()) -> set[str]:
    """Variables an expression reads that no macro binds (the apiserver declares only its own)."""
    kind = node[0]
    if kind == "var":
        return set() if node[1] in bound else {node[1]}
    if kind in MACROS:
        return free_variables(node[1], bound) | free_variables(node[3], bound | {node[2]})
    out: set[str] = set()
    for part in node[1:]:
        if isinstance(part, tuple):
            out |= free_variables(part, bound)
        elif isinstance(part, list):
            for item in part:
                out |= free_variables(item, bound)
    return out


def compile_expression(text: str):
    """Parse, and check that only the apiserver's variables are read."""
    tree = Parser(text).parse()
    unknown = free_variables(tree) - VARIABLES - {"authorizer"}
    if unknown:
        raise CelError(f"undeclared reference to {', '.join(sorted(unknown))}")
    return tree


def _truth(value) -> bool | Err:
    if isinstance(value, Err) or isinstance(value, bool):
        return value
    return Err(f"no such overload: expected bool, got {type(value).__name__}")


def evaluate(node, env: dict[str, Any]):
    kind = node[0]
    if kind == "lit":
        return node[1]
    if kind == "var":
        if node[1] not in env:
            return Err(f"undeclared {node[1]}")
        return env[node[1]]
    if kind == "list":
        items = [evaluate(i, env) for i in node[1]]
        return next((i for i in items if isinstance(i, Err)), items)
    if kind == "select":
        base = evaluate(node[1], env)
        if isinstance(base, Err):
            return base
        if not isinstance(base, dict):
            return Err(f"no such key {node[2]!r} on {type(base).__name__}")
        return base[node[2]] if node[2] in base else Err(f"no such key: {node[2]}")
    if kind == "index":
        base, key = evaluate(node[1], env), evaluate(node[2], env)
        for side in (base, key):
            if isinstance(side, Err):
                return side
        if not isinstance(base, dict) or not isinstance(key, str):
            return Err(f"no such overload: {type(base).__name__}[{type(key).__name__}]")
        return base[key] if key in base else Err(f"no such key: {key}")
    if kind == "has":
        base = evaluate(node[1][1], env)
        if isinstance(base, Err):
            return base
        if not isinstance(base, dict):
            return Err(f"has() on {type(base).__name__}")
        return node[1][2] in base
    if kind == "not":
        value = _truth(evaluate(node[1], env))
        return value if isinstance(value, Err) else not value
    if kind in ("or", "and"):
        left, right = _truth(evaluate(node[1], env)), _truth(evaluate(node[2], env))
        decisive = kind == "or"
        if left is decisive or right is decisive:
            return decisive
        if isinstance(left, Err):
            return left
        if isinstance(right, Err):
            return right
        return not decisive
    if kind in ("==", "!="):
        left, right = evaluate(node[1], env), evaluate(node[2], env)
        for side in (left, right):
            if isinstance(side, Err):
                return side
        return (left == right) == (kind == "==")
    if kind == "in":
        item, container = evaluate(node[1], env), evaluate(node[2], env)
        for side in (item, container):
            if isinstance(side, Err):
                return side
        if isinstance(container, (list, dict)):
            return item in container
        return Err("no such overload for 'in'")
    if kind == "method":
        _, name, target, arg = node
        target, arg = evaluate(target, env), evaluate(arg, env)
        for side in (target, arg):
            if isinstance(side, Err):
                return side
        if not isinstance(target, str) or not isinstance(arg, str):
            return Err(f"no such overload for {name}")
        return {"startsWith": target.startswith, "endsWith": target.endswith,
                "contains": target.__contains__}[name](arg)
    if kind in MACROS:
        _, target_node, var, predicate = node
        target = evaluate(target_node, env)
        if isinstance(target, Err):
            return target
        if not isinstance(target, (list, dict)):
            return Err(f"{kind}() on {type(target).__name__}")
        decisive = kind == "exists"
        error = None
        for element in target:  # a map iterates over its keys
            value = _truth(evaluate(predicate, {**env, var: element}))
            if value is decisive:
                return decisive
            if isinstance(value, Err):
                error = error or value
        return error if error is not None else not decisive
    raise AssertionError(f"unknown node {kind}")


def run(text: str, **env):
    return evaluate(compile_expression(text), env)
