"""`host check`: a host against its cohort and the reference deployment's prerequisites (docs/architecture.md).

One module per check, each opening with its spec and holding one pure function, `check(host) -> findings`: a
function of the facts, the cohort and the policy that returns its findings (none where it does not apply). Each
finding says what, why and the fix, with a stable id and a docs link; what cannot be read is `unknown`, never
`pass`. `CHECKS` lists them in the order a report shows them."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from webhook.config.model import Cohort, Policy
from webhook.host.checks import (
    cdi_runtime,
    cdi_spec,
    compute_mode,
    container_toolkit,
    containerd_config,
    driver_branch,
    gpus,
    mig_devices,
    mig_mode,
    mig_profiles,
    mps,
    node_labels,
    runtime_handler,
    sharing_config,
)
from webhook.host.checks.finding import (
    Findings,
    HostCheckId,
    HostFinding,
    HostInput,
    Status,
    docs_link,
    quoted,
    verdict,
)
from webhook.host.facts import HostFacts


@dataclass(frozen=True, slots=True)
class HostCheck:
    """One check: its id and the pure function that returns its findings."""

    id: HostCheckId
    run: Callable[[HostInput], Findings]


CHECKS: tuple[HostCheck, ...] = tuple(HostCheck(m.ID, m.check) for m in (
    gpus, driver_branch, container_toolkit, containerd_config, cdi_spec, cdi_runtime, runtime_handler, mig_mode,
    mig_profiles, mig_devices, compute_mode, mps, node_labels, sharing_config))


def check_host(facts: HostFacts, cohort: Cohort, policy: Policy, *, handler: str | None = None,
               language: str | None = None) -> list[HostFinding]:
    """Every check's findings, in `CHECKS`' order and in `language` (default: the policy's)."""
    host = HostInput(facts=facts, cohort=cohort, policy=policy,
                     handler=handler or cohort.runtime_class_name or "nvidia", language=language or policy.language)
    return [finding for check in CHECKS for finding in check.run(host)]


__all__ = ["CHECKS", "HostCheck", "HostCheckId", "HostFinding", "HostInput", "Status", "check_host", "docs_link",
           "quoted", "verdict"]
