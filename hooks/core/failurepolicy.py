"""``spec.failurePolicy.rules``: why an attempt failed, and what to do about it.

Pure: reads the spec, the failed JobSet and the pods that tell the failure (``Reader.
attempt_failure_pods``, read by the caller), returns a ``Verdict``. Rules are matched in order; the
first whose every matcher matches decides. A rule's matchers (all optional; a rule without one
matches every failure):

- ``onJobSetFailure``: ``reasons`` (the JobSet's ``Failed`` condition reason is one of them) and/or
  ``messageContains`` (its message contains the text);
- ``onExitCodes``: ``operator`` ``In``/``NotIn``, ``values``, optional ``containerName``: a container
  of a failed pod ended with such an exit code (``NotIn`` never matches exit code 0);
- ``onPodConditions``: a list of ``{type, status}`` (status defaults to ``"True"``): a pod of the
  attempt carries one of them, such as ``DisruptionTarget`` (preemption, eviction, node loss).

Actions: ``FailJob`` (the Job ends Failed now), ``RestartJob`` (the default, also when no rule
matches: counts against ``maxRestarts``), ``RestartJobIgnoreMaxRestarts`` (a disruption: restart
without spending one). The rule's ``name`` is the cause counted in ``status.restartsByCause``;
a failure no rule matches counts as ``DEFAULT_CAUSE``.

Failure is classified here, once: the verdict's class (``ended_as``: ``EndCause.FAILED``, or
``EndCause.PREEMPTED`` when the first failing pod, ``first_failing``, was disrupted by a
preemption) is what ``status.attempts`` says of the attempt (``hooks.core.history.failure_facts``),
and the verdict's ``charge`` (``hooks.core.budget.Charge``) is what the restart costs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hooks.core import deadlines
from hooks.core.budget import Charge
from hooks.core.jobset import InvalidSpec
from hooks.core.request import Spec
from hooks.core.vocab import EndCause

FAIL_JOB = "FailJob"
RESTART_JOB = "RestartJob"
RESTART_IGNORE = "RestartJobIgnoreMaxRestarts"
ACTIONS = (FAIL_JOB, RESTART_JOB, RESTART_IGNORE)
DEFAULT_CAUSE = "default"
PREEMPTION = "Preemption"
"""How a ``DisruptionTarget`` reason that is a preemption begins (``PreemptionByScheduler``, ...)."""
MAX_RULES = 16
MAX_EVIDENCE = 3
"""How many pods a verdict's message names."""


@dataclass(frozen=True)
class Verdict:
    """What a failed attempt leads to: ``action`` (one of ``ACTIONS``), ``cause`` (the rule's name,
    or ``DEFAULT_CAUSE``), ``message`` (what matched, in words that depend only on the inputs) and
    ``ended`` (the failure's class, ``ended_as``)."""

    action: str
    cause: str
    message: str
    ended: EndCause = EndCause.FAILED

    @property
    def restarts(self) -> bool:
        """Whether this verdict restarts the Job (``RestartJob`` or ``RestartJobIgnoreMaxRestarts``)."""
        return self.action in (RESTART_JOB, RESTART_IGNORE)

    @property
    def counted(self) -> bool:
        """Whether a restart for this verdict spends one of ``maxRestarts`` (``spends_no_restart``)."""
        return self.restarts and not spends_no_restart(self.action)

    @property
    def charge(self) -> Charge | None:
        """What the restart costs (``hooks.core.budget.spend`` says whether it may be paid), or
        ``None`` when the verdict restarts nothing (``FailJob``)."""
        return Charge(self.cause, self.ended, self.counted) if self.restarts else None


def spends_no_restart(action: object) -> bool:
    """Whether a restart for failure-policy ``action`` spends no restart: ``RestartJobIgnoreMaxRestarts``
    (a disruption). The one home of the rule: the restart row (``Verdict.counted``), the status check
    that a Restarting Job with no restart counted is one of these (``hooks.core.evidence``, from
    ``status.lastFailure.action``) and the ``Restarting`` Event's words (``hooks.core.events``)."""
    return action == RESTART_IGNORE


def rules_of(spec: Spec) -> list[Mapping[str, Any]]:
    """The rules of ``spec.failurePolicy`` (``Spec.rules``: raw objects, each rule's meaning is judged
    here), checked. Raises ``InvalidSpec`` (code ``InvalidFailurePolicy``) for anything the CRD
    would have refused: over ``MAX_RULES``, a rule without a unique name, an unknown action or
    operator, a matcher of the wrong shape, ``In`` with exit code 0."""
    rules = spec.rules
    if len(rules) > MAX_RULES:
        raise _invalid(f"spec.failurePolicy.rules must be a list of at most {MAX_RULES} rules")
    names: set[str] = set()
    for index, rule in enumerate(rules):
        path = f"spec.failurePolicy.rules[{index}]"
        name = rule.get("name")
        if not isinstance(name, str) or not name or name in names:
            raise _invalid(f"{path}.name must be a non-empty name unique among the rules")
        names.add(name)
        if rule.get("action") not in ACTIONS:
            raise _invalid(f"{path}.action must be one of {', '.join(ACTIONS)}")
        _check_matchers(rule, path)
    return list(rules)


def needs_pods(rules: Sequence[Mapping[str, Any]]) -> bool:
    """Whether any rule reads pods (exit codes or pod conditions): only then does a failed read of
    the pods hold the verdict (``hooks.core.rows.current.failed``)."""
    return any("onExitCodes" in rule or "onPodConditions" in rule for rule in rules)


def judge(rules: Sequence[Mapping[str, Any]], jobset: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> Verdict:
    """The verdict on the failed ``jobset`` whose telling pods are ``pods`` (sorted by name):
    the first rule that matches, else ``RestartJob`` with cause ``DEFAULT_CAUSE``."""
    reason, message = failure_of(jobset)
    for rule in rules:
        matched = _match(rule, reason, message, pods)
        if matched is not None:
            said = f"rule {rule['name']} matched" + (f": {matched}" if matched else "")
            return Verdict(action=str(rule["action"]), cause=str(rule["name"]), message=said, ended=ended_as(pods))
    told = f"JobSet failed ({reason})" if reason else "JobSet failed"
    return Verdict(action=RESTART_JOB, cause=DEFAULT_CAUSE, message=f"no rule matched: {told}" if rules else told,
                   ended=ended_as(pods))


def ended_as(pods: Sequence[Mapping[str, Any]]) -> EndCause:
    """The class of a failure whose telling pods are ``pods``: ``EndCause.PREEMPTED`` when the first
    failing pod (``first_failing``) carries a ``DisruptionTarget`` whose reason is a preemption
    (``PREEMPTION``), else ``EndCause.FAILED`` (also without pods)."""
    pod = first_failing(pods)
    disrupted = disruption(pod) if pod is not None else None
    preempted = disrupted is not None and str(disrupted.get("reason") or "").startswith(PREEMPTION)
    return EndCause.PREEMPTED if preempted else EndCause.FAILED


def first_failing(pods: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The pod that failed first: the earliest end of a container that ended non-zero or of a
    ``DisruptionTarget`` condition; pods without such a time after those with one; then by name."""
    ranked = sorted(pods, key=lambda pod: str((pod.get("metadata") or {}).get("name") or ""))
    timed = [(when, index) for index, pod in enumerate(ranked) if (when := _failed_at(pod)) is not None]
    if timed:
        return ranked[min(timed)[1]]
    return ranked[0] if ranked else None


def _failed_at(pod: Mapping[str, Any]) -> datetime | None:
    moments = []
    for container in _containers(pod):
        terminated = (container.get("state") or {}).get("terminated") or {}
        if _nonzero(terminated.get("exitCode")):
            moments.append(deadlines.time_or_none(terminated.get("finishedAt")))
    disrupted = disruption(pod)
    if disrupted is not None:
        moments.append(deadlines.time_or_none(disrupted.get("lastTransitionTime")))
    known = [moment for moment in moments if moment is not None]
    return min(known) if known else None


def failed_container(pod: Mapping[str, Any]) -> tuple[int, str] | None:
    """(exit code, terminated reason) of the first container (init containers first) that ended non-zero."""
    for container in _containers(pod):
        terminated = (container.get("state") or {}).get("terminated") or {}
        if _nonzero(terminated.get("exitCode")):
            return int(terminated["exitCode"]), str(terminated.get("reason") or "")
    return None


def _containers(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    status = pod.get("status") or {}
    return [c for key in ("initContainerStatuses", "containerStatuses") for c in status.get(key) or ()
            if isinstance(c, Mapping)]


def _nonzero(code: object) -> bool:
    return isinstance(code, int) and not isinstance(code, bool) and code != 0


def disruption(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The pod's ``DisruptionTarget`` condition when it is True, else ``None``."""
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == "DisruptionTarget" and \
                condition.get("status") == "True":
            return condition
    return None


def failure_of(jobset: Mapping[str, Any]) -> tuple[str, str]:
    """The ``reason`` and ``message`` of the JobSet's ``Failed=True`` condition (``""`` when none)."""
    for condition in (jobset.get("status") or {}).get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == "Failed" and condition.get("status") == "True":
            return str(condition.get("reason") or ""), str(condition.get("message") or "")
    return "", ""


def _match(rule: Mapping[str, Any], reason: str, message: str, pods: Sequence[Mapping[str, Any]]) -> str | None:
    """What made every matcher of ``rule`` match, in words, or ``None`` when one does not."""
    said: list[str] = []
    on_jobset = rule.get("onJobSetFailure")
    if on_jobset is not None:
        reasons = on_jobset.get("reasons")
        if reasons and reason not in reasons:
            return None
        contains = on_jobset.get("messageContains")
        if contains and contains not in message:
            return None
        said.append(f"JobSet failure reason {reason}" if reason else "JobSet failure")
    on_codes = rule.get("onExitCodes")
    if on_codes is not None:
        hits = _exit_code_hits(on_codes, pods)
        if not hits:
            return None
        said.append(_listed(hits))
    on_conditions = rule.get("onPodConditions")
    if on_conditions is not None:
        hits = _condition_hits(on_conditions, pods)
        if not hits:
            return None
        said.append(_listed(hits))
    return "; ".join(said)


def _exit_code_hits(matcher: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> list[str]:
    """``pod container exited with N`` for each container of a failed pod the matcher selects."""
    values = set(matcher.get("values") or ())
    inside = matcher.get("operator") == "In"
    only = matcher.get("containerName")
    hits = []
    for pod in pods:
        status = pod.get("status") or {}
        if status.get("phase") != "Failed":
            continue
        for key in ("initContainerStatuses", "containerStatuses"):
            for container in status.get(key) or ():
                code = ((container.get("state") or {}).get("terminated") or {}).get("exitCode")
                if not isinstance(code, int) or (only and container.get("name") != only):
                    continue
                if (code in values) if inside else (code != 0 and code not in values):
                    hits.append(f"pod {_name(pod)} container {container.get('name')} exited with {code}")
    return hits


def _condition_hits(matchers: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]]) -> list[str]:
    """``pod has condition T (reason)`` for each pod carrying one of the ``matchers``' conditions."""
    wanted = {(str(m.get("type")), str(m.get("status") or "True")) for m in matchers}
    hits = []
    for pod in pods:
        for condition in (pod.get("status") or {}).get("conditions") or ():
            if (str(condition.get("type")), str(condition.get("status"))) in wanted:
                why = f" ({condition['reason']})" if condition.get("reason") else ""
                hits.append(f"pod {_name(pod)} has condition {condition.get('type')}{why}")
                break
    return hits


def _listed(hits: list[str]) -> str:
    text = ", ".join(hits[:MAX_EVIDENCE])
    return text + (f" and {len(hits) - MAX_EVIDENCE} more" if len(hits) > MAX_EVIDENCE else "")


def _name(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("name", ""))


def _check_matchers(rule: Mapping[str, Any], path: str) -> None:
    """The shape of a rule's matchers (see the module doc)."""
    on_jobset = rule.get("onJobSetFailure")
    if on_jobset is not None:
        reasons = on_jobset.get("reasons") if isinstance(on_jobset, Mapping) else None
        if not isinstance(on_jobset, Mapping) or not (reasons is None or _strings(reasons)) or \
                not isinstance(on_jobset.get("messageContains", ""), str):
            raise _invalid(f"{path}.onJobSetFailure must have reasons (strings) and/or messageContains (a string)")
    on_codes = rule.get("onExitCodes")
    if on_codes is not None:
        if not isinstance(on_codes, Mapping) or on_codes.get("operator") not in ("In", "NotIn"):
            raise _invalid(f"{path}.onExitCodes.operator must be In or NotIn")
        values = on_codes.get("values")
        if not isinstance(values, list) or not values or not all(
                isinstance(v, int) and not isinstance(v, bool) for v in values):
            raise _invalid(f"{path}.onExitCodes.values must list exit codes")
        if on_codes["operator"] == "In" and 0 in values:
            raise _invalid(f"{path}.onExitCodes: exit code 0 is success, it cannot be matched with In")
        if not isinstance(on_codes.get("containerName", ""), str):
            raise _invalid(f"{path}.onExitCodes.containerName must be a string")
    on_conditions = rule.get("onPodConditions")
    if on_conditions is not None and (not isinstance(on_conditions, list) or not on_conditions or not all(
            isinstance(c, Mapping) and isinstance(c.get("type"), str) and c["type"] and
            c.get("status", "True") in ("True", "False", "Unknown") for c in on_conditions)):
        raise _invalid(f"{path}.onPodConditions must list conditions with a type and a status")


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _invalid(reason: str) -> InvalidSpec:
    return InvalidSpec(reason, "InvalidFailurePolicy")
