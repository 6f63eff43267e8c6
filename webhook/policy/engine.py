"""The decision for one object: run every check, apply mutations to Pods, give each finding the action
that the configuration (mode, namespace overrides, exceptions) assigns. Pure: no I/O, no logging."""
from __future__ import annotations

from collections.abc import Mapping
from fnmatch import fnmatchcase
from operator import itemgetter
from typing import Any, NamedTuple

from webhook.config.model import Policy
from webhook.objects.access import as_dict, as_list, as_str
from webhook.objects.kinds import BY_KIND, INFRASTRUCTURE_KINDS, is_legacy_dra
from webhook.objects.podspec import PodView, display_name, revised_view, view_of
from webhook.policy.context import Context
from webhook.policy.contract import Check, Mutator, Target
from webhook.policy.coverage import claims_covered, covered, exported_rules, mutated_rules, silent_in
from webhook.policy.definitions import CHECKS, MUTATIONS
from webhook.policy.dra import ObjectFacts, object_facts
from webhook.policy.draft import Draft
from webhook.policy.gpu import GpuFacts, analyse, revised
from webhook.policy.infra import InfraFacts, infra_facts
from webhook.policy.messages import line, mutation_line
from webhook.policy.patch import make_patch
from webhook.policy.phase import Phase
from webhook.policy.results import Evaluation, Finding, Mutation, RuleError, Violation
from webhook.rules import Action, Rule

LEGACY_CLUSTER_KINDS = frozenset({"ResourceClass"})  # v1alpha2, cluster-scoped like DeviceClass
_first = itemgetter(0)
_STRENGTH = {Action.OFF: 0, Action.AUDIT: 1, Action.WARN: 2, Action.ENFORCE: 3}


def evaluate(obj: dict[str, Any], *, kind: str, namespace: str, policy: Policy, context: Context,
             operation: str = "CREATE", phases: Phase = Phase.BOTH, view: PodView | None = None,
             added_ephemeral: frozenset[str] | None = None, infrastructure_only: bool = False) -> Evaluation:
    """Evaluate `obj` as the webhooks would on `operation`: for a Pod on CREATE the mutating webhook's patch
    first (`Phase.MUTATE`), then the validating rules on the mutated Pod (`Phase.VALIDATE`).

    `kind` and `namespace` are the object's, as `object_namespace` reads them; exempt namespaces were
    skipped before (`exempt`). `view` is the object's pod view when the caller has already built it.
    `added_ephemeral`: on an UPDATE of pods/ephemeralcontainers, the names of the ephemeral containers it
    adds: only those are mutated (hide-gpus) and only what concerns them is reported.
    `infrastructure_only`: a controller in an exempt namespace, where only its pod template's allocation
    owner is judged (infrastructure lives there)."""
    validate, mutate = phases.validates, phases.mutates
    plan = _plan(policy, namespace)
    info = BY_KIND.get(kind)
    if info is not None and info.pod_spec_path is not None:
        view = view or view_of(obj, info, namespace)
        return _pod_bearing(obj, view, view.name, namespace, operation, policy, context, plan, validate, mutate,
                            added_ephemeral, infrastructure_only)
    name = display_name(obj)
    if not validate:
        return Evaluation(kind=kind, namespace=namespace, name=name, dry_run=plan.dry_run, language=plan.language,
                          skipped=f"{kind} objects are never mutated")
    if kind in INFRASTRUCTURE_KINDS:
        return _infrastructure(obj, kind, name, policy, context, plan)
    if info is not None or is_legacy_dra(obj):
        return _dra_object(obj, kind, name, namespace, operation, policy, context, plan)
    return Evaluation(kind=kind, namespace=namespace, name=name, language=plan.language,
                      skipped=f"kind {kind or '(none)'} is not one gpu-admission handles")


def object_namespace(obj: dict[str, Any], kind: str, default: str) -> str:
    """The object's namespace ("" for cluster-scoped kinds), else `default` (the request's or the CLI's)."""
    info = BY_KIND.get(kind)
    if (info is not None and not info.namespaced) or kind in LEGACY_CLUSTER_KINDS:
        return ""
    return as_str(as_dict(obj.get("metadata")).get("namespace")) or default


def exempt(obj: dict[str, Any], kind: str, namespace: str, policy: Policy) -> Evaluation | None:
    """The skipped Evaluation for an object in an exempt namespace (infrastructure, the service's own)."""
    if policy.is_exempt(namespace):
        return Evaluation(kind=kind, namespace=namespace, name=display_name(obj),
                          language=_plan(policy, namespace).language, skipped=f'namespace "{namespace}" is exempt')
    return None


class _Planned(NamedTuple):
    """A mutation as the configuration of one namespace runs it."""

    rule: Rule
    mutator: Mutator
    action: Action
    applied: bool  # its edits go into the patch (not at audit, nor in dry-run)
    announced: bool  # its edits are also said, as warnings (warn) or in reports (audit, dry-run)


class _Plan(NamedTuple):
    """What the configuration makes of one namespace: the same for every request there."""

    dry_run: bool
    language: str  # of the messages: the policy's, or the namespace override's
    actions: Mapping[Rule, Action]
    checks: Mapping[Target, tuple[tuple[Rule, Check], ...]]  # the checks whose action is not off, by target
    mutations: tuple[_Planned, ...]  # the mutations whose action is not off, in the order they run
    debug_mutations: tuple[_Planned, ...]  # those of them that edit a `kubectl debug` update
    in_tree: frozenset[Rule]  # rules the apiserver's own policies decide, for the objects they cover
    in_tree_mutations: frozenset[Rule]  # mutations the apiserver's own policies apply, for the Pods they cover


def _make_plan(policy: Policy, namespace: str) -> _Plan:
    (mode, actions), language = policy.settings_for(namespace), policy.language_for(namespace)
    checks = {t: tuple((r, c) for r, c in CHECKS[t] if actions[r] is not Action.OFF) for t in Target}
    dry_run = mode == "audit"
    mutations = tuple(_planned(d.rule, d.mutation, actions[d.rule], dry_run) for d in MUTATIONS
                      if d.mutation and actions[d.rule] is not Action.OFF)
    in_tree = policy.derived(exported_rules) if policy.in_tree.validation and not policy.is_exempt(namespace) \
        else frozenset()
    in_tree_mutations = frozenset(r for r in policy.derived(mutated_rules) if silent_in(policy, r, namespace)) \
        if policy.in_tree.mutation and not policy.is_exempt(namespace) else frozenset()
    return _Plan(dry_run, language, actions, checks, mutations,
                 tuple(m for m in mutations if m.mutator.debug is not None), in_tree, in_tree_mutations)


def _planned(rule: Rule, mutator: Mutator, action: Action, dry_run: bool) -> _Planned:
    applied = not dry_run and action is not Action.AUDIT
    return _Planned(rule, mutator, action, applied, not applied or action is Action.WARN)


def _plan(policy: Policy, namespace: str) -> _Plan:
    """Computed once per policy and namespace; namespaces without overrides share one plan."""
    return policy.derived(_make_plan, namespace if namespace in policy.overridden_namespaces else "")


def _lifted(policy: Policy, namespace: str, name: str, spec: Mapping[str, Any],
            user: Mapping[str, Any]) -> frozenset[Rule]:
    """Rules that config-owned exceptions lift for this request (never an annotation on the workload)."""
    if not policy.exceptions:
        return frozenset()
    username = as_str(user.get("username")) or ""
    groups = {g for g in as_list(user.get("groups")) if type(g) is str}
    accounts = {f"{namespace}/{as_str(spec.get('serviceAccountName')) or 'default'}"} if spec else set()
    if username.startswith("system:serviceaccount:"):
        accounts.add(username[len("system:serviceaccount:"):].replace(":", "/", 1))
    lifted: set[Rule] = set()
    for e in policy.exceptions:
        if ((e.namespaces and namespace not in e.namespaces)
                or (e.names and not any(fnmatchcase(name, p) for p in e.names))
                or (e.service_accounts and not accounts.intersection(e.service_accounts))
                or (e.users and username not in e.users)
                or (e.groups and not groups.intersection(e.groups))
                or (e.scheduler_names and as_str(spec.get("schedulerName")) not in e.scheduler_names)):
            continue
        lifted.update(e.rules)
    return frozenset(lifted)


def _violations(found: list[tuple[Rule, Finding]], subject: str, plan: _Plan,
                lifted: frozenset[Rule], policy: Policy) -> list[Violation]:
    """The findings with their actions and messages: the one place the object, rule id and docs link are
    added to what a check says."""
    out = []
    actions = plan.actions
    for rule, f in found:
        if rule in lifted:
            continue
        action = actions.get(rule, Action.ENFORCE)
        if f.cap is not None and _STRENGTH[action] > _STRENGTH[f.cap]:
            action = f.cap
        if action is not Action.OFF:
            out.append(Violation(rule, action, f.path, line(policy, rule, subject, f.what, f.why, f.fix,
                                                                 plan.language)))
    return out


def _run_checks(checks: tuple[tuple[Rule, Check], ...], facts: GpuFacts | ObjectFacts | InfraFacts, context: Context,
                policy: Policy, lifted: frozenset[Rule], errors: list[RuleError]) -> list[tuple[Rule, Finding]]:
    """Every check, pod spec's or DRA object's, runs here: one that raises is recorded with what its
    onError decides, and the decision goes on without it."""
    findings: list[tuple[Rule, Finding]] = []
    for rule, check in checks:
        if lifted and rule in lifted:
            continue
        try:
            found = check.run(facts, context, policy)
        except Exception as exc:  # one broken rule must not take the decision down with it
            errors.append(_failed(rule, exc, policy))
            continue
        if found:
            findings.extend((rule, f) for f in found)
    return findings


def _pod_bearing(obj: dict[str, Any], view: PodView, name: str, namespace: str, operation: str, policy: Policy,
                 context: Context, plan: _Plan, validate: bool, mutate: bool,
                 added_ephemeral: frozenset[str] | None = None, infrastructure_only: bool = False) -> Evaluation:
    kind = view.kind.kind
    facts = analyse(view, policy, context)
    lifted = _lifted(policy, namespace, name, view.spec, context.user)
    dry_run = plan.dry_run
    errors: list[RuleError] = []
    reported: list[Violation] = []
    mutations: list[Mutation] = []
    mutated = None
    patch: tuple[Any, ...] = ()
    debug = added_ephemeral is not None
    if mutate and view.kind.mutated and (operation == "CREATE" or debug) and not infrastructure_only:
        work = Draft(obj)
        # A debug container's update may change nothing else: only the mutations that edit the added containers.
        for rule, mutation, action, apply, announce in plan.mutations if not debug else plan.debug_mutations:
            if rule in lifted or (rule in plan.in_tree_mutations and covered(frozenset({rule}), view, policy)):
                continue  # excepted, or already applied by the apiserver's MutatingAdmissionPolicy
            target = work if apply or dry_run else Draft(work.root)
            try:
                if not debug:
                    records = mutation.mutate(target, facts, policy, context)
                else:
                    assert mutation.debug is not None and added_ephemeral is not None  # as plan.debug_mutations hold
                    records = mutation.debug(target, facts, policy, context, added_ephemeral)
                withheld = mutation.withheld(facts, policy, context) if mutation.withheld and not debug else None
                if withheld:  # what it would have set but did not is said, as a warning (or at audit)
                    reported.extend(
                        Violation(rule, Action.AUDIT if action is Action.AUDIT else Action.WARN, f.path,
                                  line(policy, rule, view.subject, f.what, f.why, f.fix, plan.language))
                        for f in withheld)
            except Exception as exc:
                errors.append(_failed(rule, exc, policy, deniable=False))  # /mutate never denies
                continue
            if records:
                mutations.append(Mutation(rule, action, tuple(map(_first, records)), apply))
            if announce:
                reported.extend(
                    Violation(rule, action, path,
                              mutation_line(policy, rule, view.subject, apply, what, path, plan.language))
                    for path, what in records)
        if work.changed and not dry_run:
            mutated = work.root
            patch = tuple(make_patch(obj, mutated))
            if validate:
                # the mutated Pod's facts, derived from the original's (what the mutations left is shared)
                view = revised_view(view, mutated)
                facts = revised(facts, view, policy, context)
    if validate and plan.in_tree and operation == "CREATE" and not debug:
        # The in-tree policies match CREATE only, and see the object as mutated, as this view is now; /mutate
        # (validate off) reports no finding the coverage could lift.
        lifted = lifted | covered(plan.in_tree, view, policy)
    findings = _run_checks(plan.checks[Target.POD_SPEC], facts, context, policy, lifted, errors) \
        if validate and not infrastructure_only else []
    if validate and kind != "Pod" and plan.checks[Target.TEMPLATE]:
        findings += _run_checks(plan.checks[Target.TEMPLATE], facts, context, policy, lifted, errors)
    if added_ephemeral is not None and findings:
        findings = _about(findings, view, added_ephemeral)
    cohort = facts.choice.cohort.name if facts.choice.cohort else None
    return Evaluation(kind=kind, namespace=namespace, name=name, language=plan.language,
                      violations=tuple(_violations(findings, view.subject, plan, lifted, policy) + reported),
                      patch=patch,
                      mutated=mutated if patch else None, dry_run=dry_run, cohort=cohort, errors=tuple(errors),
                      mutations=tuple(mutations))


def _about(findings: list[tuple[Rule, Finding]], view: PodView,
           names: frozenset[str]) -> list[tuple[Rule, Finding]]:
    """The findings about the given ephemeral containers: what a debug container's update changes (the
    rest of the pod was admitted, or not, when it was created)."""
    prefixes = tuple(c.path for c in view.containers if c.section == "ephemeralContainers" and c.name in names)
    return [(r, f) for r, f in findings if any(f.path == p or f.path.startswith((p + ".", p + "[")) for p in prefixes)]


def _dra_object(obj: dict[str, Any], kind: str, name: str, namespace: str, operation: str, policy: Policy,
                context: Context, plan: _Plan) -> Evaluation:
    facts = object_facts(obj, kind, name, namespace, policy, context)
    lifted = _lifted(policy, namespace, name, {}, context.user)
    if plan.in_tree and operation == "CREATE" and facts.claim is not None:
        lifted = lifted | claims_covered(plan.in_tree, facts.claim, policy)  # the apiserver's policies decide them
    errors: list[RuleError] = []
    target = Target.CLAIM if facts.claim is not None else Target.DEVICE_CLASS
    findings = _run_checks(plan.checks[target], facts, context, policy, lifted, errors)
    return Evaluation(kind=kind, namespace=namespace, name=name, language=plan.language,
                      violations=tuple(_violations(findings, facts.subject, plan, lifted, policy)),
                      dry_run=plan.dry_run,
                      cohort=facts.cohort.name if facts.cohort else None, errors=tuple(errors))


def _infrastructure(obj: dict[str, Any], kind: str, name: str, policy: Policy, context: Context,
                    plan: _Plan) -> Evaluation:
    """The GPU Operator's objects and Node updates: cluster-scoped, so only exceptions by name, user or group
    apply to them."""
    facts = infra_facts(obj, kind, name, context.old)
    lifted = _lifted(policy, "", name, {}, context.user)
    errors: list[RuleError] = []
    findings = _run_checks(plan.checks[Target.INFRASTRUCTURE], facts, context, policy, lifted, errors)
    return Evaluation(kind=kind, namespace="", name=name, language=plan.language,
                      violations=tuple(_violations(findings, facts.subject, plan, lifted, policy)),
                      dry_run=plan.dry_run, errors=tuple(errors))


def _failed(rule: Rule, exc: Exception, policy: Policy, deniable: bool = True) -> RuleError:
    """A rule raised: the decision goes on without it, and its onError says whether that denies."""
    return RuleError(rule, f"{type(exc).__name__}: {exc}", deniable and policy.on_error.get(rule) == "deny")
