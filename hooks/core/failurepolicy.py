"""``spec.failurePolicy.rules``: why an attempt failed, and what to do about it.

Pure: reads the spec, the failed JobSet and the pods that tell the failure (``Reader.
attempt_failure_pods``, read by the caller), returns a ``Verdict``. Rules are matched in order; the
first whose every matcher matches decides. A rule's matchers (all optional; a rule without one
matches every failure):

- ``onJobSetFailure``: ``reasons`` (the JobSet's ``Failed`` condition reason is one of them) and/or
  ``messageContains`` (its message contains the text);
- ``onExitCodes``: ``operator`` ``In``/``NotIn``, ``values``, optional ``containerName``: a container
  of a failed pod ended with such an exit code (``NotIn`` never matches exit code 0);
- ``onPodConditions``: a list of ``{type, status, reason}`` (status defaults to ``"True"``, reason
  to any): a pod of the attempt carries one of them, such as ``DisruptionTarget`` (preemption,
  eviction, node loss), or ``DisruptionTarget`` with reason ``PreemptionByScheduler``;
- ``onTerminationMessage``: ``contains`` (a text, no pattern: the message is the workload's, untrusted
  input): a container of a failed pod ended with a termination message that contains it.

Actions: ``FailJob`` (the Job ends Failed now), ``RestartJob`` (the default, also when no rule
matches: spends one of the class's budget), ``RestartJobIgnoreMaxRestarts`` (a restart that spends
no budget). The rule's ``name`` is the cause counted in ``status.restartsByCause``; a failure no rule
matches counts as ``DEFAULT_CAUSE``. A rule's optional ``class`` (``hooks.core.vocab.FailureClass``)
assigns the failure's class; otherwise the default table names it (``hooks.core.failureclass.classify``,
from the pods and, when no pod says why, their nodes).

The verdict carries the ``Classified`` (``Verdict.classified``): ``status.attempts`` records it
(``hooks.core.history.failure_facts``), the verdict's ``charge`` (``hooks.core.budget.Charge``)
spends its class's budget, and the Events say it. ``spec.failurePolicy.budgets`` is checked here too
(``rules_of``): a budget out of its declared range is ``InvalidSpec``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hooks.core import failureclass
from hooks.core.budget import Charge
from hooks.core.failureclass import Classified, containers, terminated
from hooks.core.jobset import InvalidSpec
from hooks.core.request import FailureBudgets, Spec, range_of
from hooks.core.vocab import BUDGETED, EndCause, FailureClass

FAIL_JOB = "FailJob"
RESTART_JOB = "RestartJob"
RESTART_IGNORE = "RestartJobIgnoreMaxRestarts"
ACTIONS = (FAIL_JOB, RESTART_JOB, RESTART_IGNORE)
DEFAULT_CAUSE = "default"
CLASSES = tuple(word.value for word in FailureClass)
"""The values a rule's ``class`` may take."""
MAX_RULES = 16
MAX_CONTAINS = 256
"""``onTerminationMessage.contains``' longest text (the CRD's ``maxLength``)."""
MAX_EVIDENCE = 3
"""How many pods a verdict's message names."""


@dataclass(frozen=True)
class Verdict:
    """What a failed attempt leads to: ``action`` (one of ``ACTIONS``), ``cause`` (the rule's name,
    or ``DEFAULT_CAUSE``), ``message`` (what matched, in words that depend only on the inputs) and
    ``classified`` (the failure's class and its evidence: the rule's ``class``, else
    ``hooks.core.failureclass.classify``)."""

    action: str
    cause: str
    message: str
    classified: Classified = failureclass.NOTHING

    @property
    def klass(self) -> FailureClass:
        """The failure's class."""
        return self.classified.klass

    @property
    def ended(self) -> EndCause:
        """The attempt's outcome (``failureclass.outcome``: ``Preempted`` for a preemption, else ``Failed``)."""
        return failureclass.outcome(self.klass)

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
        return Charge(self.cause, self.ended, self.counted, self.klass) if self.restarts else None


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
    operator, a matcher of the wrong shape, ``In`` with exit code 0, an unknown ``class``, and a
    budget (``spec.failurePolicy.budgets``, ``check_budgets``) out of its range."""
    check_budgets(spec)
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
        if "class" in rule and rule["class"] not in CLASSES:
            raise _invalid(f"{path}.class must be one of {', '.join(CLASSES)}, got {str(rule['class'])[:40]!r}")
        _check_matchers(rule, path)
    return list(rules)


def check_budgets(spec: Spec) -> None:
    """``spec.failurePolicy.budgets``: every key within its declared range
    (``hooks.core.request.FailureBudgets``: 0 to ``MAX_BUDGET``). Raises ``InvalidSpec`` (code
    ``InvalidFailurePolicy``) naming the first that is not: the budgets are then read at their
    defaults (``hooks.core.budget.budget_of``), and a running Job keeps running (row 7)."""
    budgets = spec.budgets
    for name, allowed in _BUDGET_RANGES:
        value = getattr(budgets, name)
        if value is not None and not allowed.admits(value):
            raise _invalid(f"spec.failurePolicy.budgets.{name} must be an integer from {allowed.low} to "
                           f"{allowed.high}, got {value}")


_BUDGET_RANGES = tuple((klass.value, range_of(FailureBudgets, klass.value)) for klass in BUDGETED)
"""Each budgeted class's key in ``spec.failurePolicy.budgets`` and its declared ``Range``, in
``BUDGETED``'s order: looked up once, not on every call (issue 32 item 4)."""


def needs_pods(rules: Sequence[Mapping[str, Any]]) -> bool:
    """Whether any rule reads pods (exit codes, pod conditions or termination messages): only then
    does a failed read of the pods hold the verdict (``hooks.core.rows.current.failed``); else the
    verdict goes on, its class ``unknown`` (``hooks.core.failureclass.unread``)."""
    return any("onExitCodes" in rule or "onPodConditions" in rule or "onTerminationMessage" in rule
               for rule in rules)


def judge(rules: Sequence[Mapping[str, Any]], jobset: Mapping[str, Any], pods: Sequence[Mapping[str, Any]],
          classified: Classified | None = None) -> Verdict:
    """The verdict on the failed ``jobset`` whose telling pods are ``pods`` (sorted by name), the
    default table's class being ``classified`` (``hooks.core.failureclass.classify``, with the node
    states the caller read; ``None``: classified from the pods alone): the first rule that matches
    (its ``class``, when it names one, is the failure's), else ``RestartJob`` with cause
    ``DEFAULT_CAUSE``."""
    found = classified if classified is not None else failureclass.classify(pods)
    reason, message = failure_of(jobset)
    for rule in rules:
        matched = _match(rule, reason, message, pods)
        if matched is not None:
            said = f"rule {rule['name']} matched" + (f": {matched}" if matched else "")
            assigned = rule.get("class")
            if isinstance(assigned, str) and assigned in CLASSES:
                found = failureclass.rule_class(assigned, str(rule["name"]), matched, pods)
            return Verdict(action=str(rule["action"]), cause=str(rule["name"]), message=said, classified=found)
    told = f"JobSet failed ({reason})" if reason else "JobSet failed"
    return Verdict(action=RESTART_JOB, cause=DEFAULT_CAUSE, message=f"no rule matched: {told}" if rules else told,
                   classified=found)


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
    on_message = rule.get("onTerminationMessage")
    if on_message is not None:
        hits = _message_hits(str(on_message.get("contains") or ""), pods)
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
    """``pod has condition T (reason)`` for each pod carrying one of the ``matchers``' conditions
    (a matcher with a ``reason`` only when the condition's reason is that one)."""
    hits = []
    for pod in pods:
        for condition in (pod.get("status") or {}).get("conditions") or ():
            if isinstance(condition, Mapping) and any(_condition_matches(m, condition) for m in matchers):
                why = f" ({condition['reason']})" if condition.get("reason") else ""
                hits.append(f"pod {_name(pod)} has condition {condition.get('type')}{why}")
                break
    return hits


def _condition_matches(matcher: Mapping[str, Any], condition: Mapping[str, Any]) -> bool:
    reason = matcher.get("reason")
    return (str(condition.get("type")) == str(matcher.get("type"))
            and str(condition.get("status")) == str(matcher.get("status") or "True")
            and (not reason or condition.get("reason") == reason))


def _message_hits(text: str, pods: Sequence[Mapping[str, Any]]) -> list[str]:
    """``pod container's termination message contains "text"`` for each container that ended with a
    termination message containing ``text`` (plain text: no pattern is ever compiled from a spec)."""
    hits = []
    for pod in pods:
        for container in containers(pod):
            message = terminated(container).get("message")
            if text and isinstance(message, str) and text in message:
                hits.append(f"pod {_name(pod)} container {container.get('name')} termination message contains "
                            f"{text[:60]!r}")
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
            c.get("status", "True") in ("True", "False", "Unknown") and isinstance(c.get("reason", ""), str)
            for c in on_conditions)):
        raise _invalid(f"{path}.onPodConditions must list conditions with a type, a status and an optional reason")
    on_message = rule.get("onTerminationMessage")
    if on_message is not None:
        contains = on_message.get("contains") if isinstance(on_message, Mapping) else None
        if not isinstance(contains, str) or not contains or len(contains) > MAX_CONTAINS:
            raise _invalid(f"{path}.onTerminationMessage.contains must be a text of 1 to {MAX_CONTAINS} characters")


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _invalid(reason: str) -> InvalidSpec:
    return InvalidSpec(reason, "InvalidFailurePolicy")
