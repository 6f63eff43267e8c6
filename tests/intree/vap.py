"""A stand-in for the apiserver's ValidatingAdmissionPolicy plugin (k8s.io/apiserver, plugin/policy/validating)
and the JSONPatch half of its MutatingAdmissionPolicy plugin (plugin/policy/mutating):
matchConstraints (operation and resource), the binding's namespaceSelector on kubernetes.io/metadata.name,
matchConditions, variables, validations and messageExpressions, evaluated with cel-expr-python, the runtime
webhook/objects/selectors.py uses. It replaces the real plugin in unit tests; tests/e2e/test_intree.py runs
the real one. `JSONPatch{op: ..., path: ..., value: ...}` objects are evaluated as maps and applied with
the jsonpatch library (RFC 6902, as the apiserver's patcher). What it adds to the runtime is what the
Kubernetes CEL library gives: `indexOf` and `min` (of strings) of its list library, its quantity library as
webhook/objects/selectors.py declares it, and `join` and `split` of the CEL strings extension that the apiserver's
environment includes, and its `lowerAscii` (declared here: the extension's own `indexOf` of strings would clash
with the list library's)."""
from __future__ import annotations

import copy
import functools
import re
from dataclasses import dataclass

import jsonpatch
from cel_expr_python import cel

from webhook.objects.kinds import BY_KIND
from webhook.objects.selectors import _functions as quantity_functions  # the Kubernetes quantity library


def _min(values):
    if not values:
        raise ValueError("min() of an empty list")
    return min(values)


def _index_of(values, value) -> int:
    for i, v in enumerate(values):
        if v == value:
            return i
    return -1


@functools.lru_cache(maxsize=1)
def _env():
    T = cel.Type
    index_of = cel.FunctionDecl("indexOf", [
        cel.Overload("list_indexOf_bool", T.INT, [T.List(T.BOOL), T.BOOL], is_member=True, impl=_index_of),
        cel.Overload("list_indexOf_string", T.INT, [T.List(T.STRING), T.STRING], is_member=True, impl=_index_of),
        cel.Overload("list_indexOf_int", T.INT, [T.List(T.INT), T.INT], is_member=True, impl=_index_of)])
    join = cel.FunctionDecl("join", [
        cel.Overload("list_join_string", T.STRING, [T.List(T.STRING), T.STRING], is_member=True,
                     impl=lambda values, sep: sep.join(values))])
    split = cel.FunctionDecl("split", [
        cel.Overload("string_split_string", T.List(T.STRING), [T.STRING, T.STRING], is_member=True,
                     impl=lambda text, sep: text.split(sep))])
    least = cel.FunctionDecl("min", [
        cel.Overload("list_min_string", T.STRING, [T.List(T.STRING)], is_member=True, impl=_min)])
    lower = cel.FunctionDecl("lowerAscii", [
        cel.Overload("string_lower_ascii", T.STRING, [T.STRING], is_member=True,
                     impl=lambda text: "".join(ch.lower() if ch.isascii() else ch for ch in text))])
    return cel.NewEnv(variables={"object": T.DYN, "request": T.DYN, "variables": T.DYN},
                      functions=[index_of, join, split, least, lower, *quantity_functions()])


@functools.lru_cache(maxsize=4096)
def compiled(expression: str):
    return _env().compile(expression)


def value(expression: str, data: dict, plain: bool = False):
    out = compiled(expression).eval(data=data)
    if out.type() == cel.Type.ERROR:
        raise AssertionError(f"{expression[:120]}...: {out.value()}")
    return out.plain_value() if plain else out.value()


@dataclass(frozen=True)
class Decision:
    policy: str
    actions: tuple[str, ...]
    message: str


_VARIABLE = re.compile(r"\bvariables\.([A-Za-z_][A-Za-z0-9_]*)")


def _resource_matches(policy: dict, kind: str, operation: str) -> bool:
    info = BY_KIND[kind]
    return any(info.group in r["apiGroups"] and info.resource in r["resources"] and operation in r["operations"]
               for r in policy["spec"]["matchConstraints"]["resourceRules"])


def _namespace_matches(binding: dict, namespace: str) -> bool:
    for e in binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"]:
        assert e["key"] == "kubernetes.io/metadata.name"
        if (namespace in e["values"]) != (e["operator"] == "In"):
            return False
    return True


def matched(policy: dict, obj: dict, request: dict) -> bool:
    """The policy's matchConstraints and matchConditions hold for the request."""
    data = {"object": obj, "request": request, "variables": {}}
    return _resource_matches(policy, obj["kind"], request["operation"]) and all(
        value(c["expression"], data) is True for c in policy["spec"].get("matchConditions", []))


def variable(policy: dict, name: str, obj: dict, request: dict):
    """The value of the policy's variable `name` for the request, as its expressions read it."""
    lazy = _Lazy({v["name"]: v["expression"] for v in policy["spec"].get("variables", [])},
                 {"object": obj, "request": request})
    return lazy.value(f"variables.{name}")


def admit(objects: list[dict], obj: dict, request: dict) -> list[Decision]:
    """Every failing validation of every policy whose binding matches, with the binding's actions."""
    policies = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ValidatingAdmissionPolicy"}
    out = []
    for binding in (o for o in objects if o["kind"] == "ValidatingAdmissionPolicyBinding"):
        policy = policies[binding["spec"]["policyName"]]
        if not _namespace_matches(binding, request["namespace"]) or not matched(policy, obj, request):
            continue
        data = {"object": obj, "request": request}
        lazy = _Lazy({v["name"]: v["expression"] for v in policy["spec"].get("variables", [])}, data)
        for check in policy["spec"]["validations"]:
            if lazy.value(check["expression"]) is not True:
                out.append(Decision(policy["metadata"]["name"], tuple(binding["spec"]["validationActions"]),
                                    lazy.value(check["messageExpression"])))
    return out


class _Lazy:
    """The apiserver's variables: each evaluated when an expression reads it, once. An expression gets the
    variables it names; one whose evaluation fails is left out, so that reading it fails, as reading a
    variable whose evaluation fails does in the apiserver (and one that is named but not read costs nothing)."""

    def __init__(self, expressions: dict[str, str], data: dict) -> None:
        self.expressions, self.data = expressions, data
        self.values: dict[str, tuple[bool, object]] = {}

    def _variable(self, name: str) -> tuple[bool, object]:
        if name not in self.values:
            try:
                self.values[name] = (True, self.value(self.expressions[name], plain=True))
            except AssertionError:
                self.values[name] = (False, None)
        return self.values[name]

    def value(self, expression: str, plain: bool = False):
        named = {}
        for name in dict.fromkeys(_VARIABLE.findall(expression)):
            ok, v = self._variable(name)
            if ok:
                named[name] = v
        return value(expression, {**self.data, "variables": named}, plain)


_JSONPATCH = re.compile(r'JSONPatch\{op: ("[a-z]+"), path: ')


def _as_maps(expression: str) -> str:
    """JSONPatch objects as CEL maps (the generator writes them in exactly this shape)."""
    return _JSONPATCH.sub(r'{"op": \1, "path": ', expression).replace(", value: ", ', "value": ')


def mutate(objects: list[dict], obj: dict, request: dict) -> tuple[dict, list[dict]]:
    """The object after every MutatingAdmissionPolicy whose binding matches, in the order given, and the
    patch operations applied."""
    policies = {o["metadata"]["name"]: o for o in objects if o["kind"] == "MutatingAdmissionPolicy"}
    out, applied = copy.deepcopy(obj), []
    for binding in (o for o in objects if o["kind"] == "MutatingAdmissionPolicyBinding"):
        policy = policies[binding["spec"]["policyName"]]
        if not _namespace_matches(binding, request["namespace"]) or not matched(policy, out, request):
            continue
        variables = {v["name"]: _as_maps(v["expression"]) for v in policy["spec"].get("variables", [])}
        for m in policy["spec"]["mutations"]:
            assert m["patchType"] == "JSONPatch"
            # each mutation reads the object as the ones before it left it
            ops = _Lazy(variables, {"object": out, "request": request}).value(
                _as_maps(m["jsonPatch"]["expression"]), plain=True)
            out = jsonpatch.apply_patch(out, ops)
            applied.extend(ops)
    return out, applied
