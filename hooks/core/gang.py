"""Gang scheduling with Kubernetes' own PodGroup API (issue 22, docs/adr/0106).

Pure. A Job whose ``spec.gang.policy`` is ``Gang`` (or that sets none while the cluster's default,
``NVCRE_GANG_POLICY``, is ``Gang``) gets one gang per attempt: with the attempt's JobSet the answer
holds a ``scheduling.k8s.io/v1beta1`` ``PodGroup`` of the same name, ``<job>-<attempt>``, whose gang
``minCount`` is every pod the attempt runs at once (the workers and the MPI launcher: one group),
and every pod template of that JobSet names it in ``spec.schedulingGroup.podGroupName``. The
kube-scheduler then binds all of them in one cycle or none.

The PodGroup lives and goes with its JobSet (``placement``, run once on the children the rows
decided; it returns a value, ``Placement``, that ``hooks.core.decide`` turns into a Step):
an answer holds the PodGroup of every JobSet it holds (or is about to create) whose gang is on, and
no other, so the drain barrier that gates the JobSet gates its group too, and an attempt's group is
deleted with its JobSet (kube-controller-manager's podgroup-protection keeps it until its pods are
gone). The group comes first: a new attempt's JobSet is created only once its PodGroup is among the
Job's children and is the gang the hooks build (``mismatch``). Until then the answer holds the
PodGroup alone and the Job waits ``Pending`` (``WaitingForPodGroup``), because a JobSet's pods name
their group by name, for life: created beside a PodGroup of that name that someone else made (a
squatter, which Metacontroller does not list, and whose ``AlreadyExists`` it ignores), they would be
placed by the squatter's rules, one by one if its ``minCount`` is 1.

A PodGroup among the children that is not that gang (another ``minCount``, another policy, a field the
hooks never set, another controller) is never claimed: ``GangScheduled=False`` reason ``GangMismatch``
names the field. Before its JobSet exists the JobSet is held (the hooks neither delete nor change the
group: fix it or delete it); with its JobSet running, the attempt runs on (its pods name the group
for life, and podgroup-protection keeps it while they exist: it can be neither replaced nor dropped).

Whether an attempt's gang is on is fixed when its JobSet is created: an observed JobSet keeps what
its templates say (a later change of the spec or of the default applies to the next attempt).

``GangScheduled`` (a condition) says where the current attempt's gang stands, from the PodGroup's
own conditions (the scheduler's reason and message while it cannot place it). Where the request
holds no PodGroup children (the CompositeController does not list them: the API is not served, or
the overlay is not installed), a Job that asks for a gang gets ``GangScheduled=False`` reason
``GangUnavailable`` saying why, and ``spec.gang.whenUnavailable`` decides: ``Wait`` (the default)
creates nothing and waits; ``StartWithoutGang`` creates the JobSet without a group.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from hooks.core import apitime, exclusion
from hooks.core import conditions as cond
from hooks.core.jobset import KIND as JOBSET_KIND
from hooks.core.jobset import InvalidSpec, json_copy, kept_child
from hooks.core.lifecycle import ConditionChange
from hooks.core.request import GangSpec, Spec, kept, range_of
from hooks.core.status import Condition
from hooks.core.vocab import ConditionType, GangPolicy, Outcome, Reason, WhenUnavailable
from hooks.core.wording import bounded
from hooks.core.work import PENDING, RUNNING, Context, Work
from podread.attempts import workload_name
from podread.constants import ATTEMPT_LABEL, JOB_LABEL, JOBSET_NAME_LABEL
from podread.errors import PodReadError
from podread.selector import is_active

API_VERSION = "scheduling.k8s.io/v1beta1"
KIND = "PodGroup"
# The gang's words are hooks.core.vocab's (GangPolicy, WhenUnavailable, ConditionType.GANG_SCHEDULED
# and the GangScheduled reasons); the short names the module and its readers use:
GANG, NONE = GangPolicy.GANG, GangPolicy.NONE
POLICIES = tuple(GangPolicy)
WAIT, START_WITHOUT_GANG = WhenUnavailable.WAIT, WhenUnavailable.START_WITHOUT_GANG
WHEN_UNAVAILABLE = tuple(WhenUnavailable)
CONDITION = ConditionType.GANG_SCHEDULED
SCHEDULED = Reason.SCHEDULED
"""``GangScheduled=True``: the scheduler placed the whole gang."""
WAITING = Reason.WAITING_FOR_SCHEDULER
"""``GangScheduled=False`` before the PodGroup reports anything."""
UNAVAILABLE = Reason.GANG_UNAVAILABLE
STARTED_WITHOUT_GANG = Reason.STARTED_WITHOUT_GANG
NOT_REPORTED = Reason.PLACEMENT_NOT_REPORTED
"""``GangScheduled=False`` while the attempt's pods are active and its PodGroup says nothing: the
scheduling group was dropped (``GenericWorkload`` off on the API server) or not used by the scheduler."""
NOT_REQUESTED = Reason.NOT_REQUESTED
"""``GangScheduled=False`` for an attempt that runs without a gang after one that had one."""
WAITING_FOR_PODGROUP = Reason.WAITING_FOR_POD_GROUP
"""``GangScheduled=False`` while a new attempt's JobSet waits for its PodGroup among the Job's children."""
MISMATCH = Reason.GANG_MISMATCH
"""``GangScheduled=False``: the attempt's PodGroup is not the gang the hooks build (``mismatch``)."""
NEVER_SET = ("workloadRef", "parentCompositePodGroupName", "schedulingConstraints", "resourceClaims")
"""PodGroup ``spec`` fields the hooks never set, each of which changes what the group is (a Workload's
template, a parent group, topology, shared devices): set, the group is not the hooks' gang."""
DEFAULT_DISRUPTION = {"single": {}}
"""``spec.disruptionMode`` as the API server defaults it (the hooks set none)."""
PODGROUP_SCHEDULED = ("PodGroupInitiallyScheduled", "PodGroupScheduled")
"""The PodGroup condition types the scheduler writes (v1.37: ``PodGroupInitiallyScheduled``)."""
NOT_LISTED = ("the CompositeController nvcre-jobs lists no PodGroup children (scheduling.k8s.io/v1beta1 "
              "podgroups): install manifests-gang/ on a cluster that serves them")


def check(spec: Spec) -> None:
    """Checks ``spec.gang``: its ``policy`` and ``whenUnavailable`` each unset or one of the values
    their declared ``Range`` names (``hooks.core.request.GangSpec``: ``Gang``/``None``,
    ``Wait``/``StartWithoutGang``). Raises ``InvalidSpec`` (``InvalidGang``) naming the field (the
    CRD refuses the same)."""
    gang = spec.gang
    for key, name in (("policy", "policy"), ("whenUnavailable", "when_unavailable")):
        value, allowed = getattr(gang, name), range_of(GangSpec, name).values
        if value is not None and value not in allowed:
            raise InvalidSpec(f"spec.gang.{key} must be one of {', '.join(allowed)}, got {str(value)[:40]!r}",
                              "InvalidGang")


def policy(spec: Spec, default: str) -> str:
    """``spec.gang.policy``, or ``default`` (the cluster's, ``NVCRE_GANG_POLICY``) when unset (or
    not one of ``POLICIES``: ``InvalidSpec``'s to report)."""
    return kept(spec.gang, "policy") or default


def when_unavailable(spec: Spec) -> str:
    """``spec.gang.whenUnavailable``: its declared default, ``Wait``, when unset (or not one of
    ``WHEN_UNAVAILABLE``)."""
    return kept(spec.gang, "when_unavailable")


def min_count(jobset: Mapping[str, Any]) -> int:
    """The pods a JobSet runs at once: ``replicas x parallelism`` summed over its replicated jobs
    (the launcher included; unset or not a count: 1, as the batch API defaults them), at least 1."""
    total = 0
    replicated = _at(jobset, "spec", "replicatedJobs")
    for entry in replicated if isinstance(replicated, list) else []:
        total += _count(_at(entry, "replicas")) * _count(_at(entry, "template", "spec", "parallelism"))
    return max(total, 1)


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 1


def _at(node: object, *keys: str) -> object:
    """``node[k1][k2]...``, ``None`` where a step is not an object (an observed child is raw)."""
    for key in keys:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


def names_group(jobset: Mapping[str, Any]) -> bool:
    """Whether every pod template of ``jobset`` (observed: any shape) names its PodGroup, the
    JobSet's own name, in ``spec.schedulingGroup.podGroupName``."""
    name = _at(jobset, "metadata", "name")
    replicated = _at(jobset, "spec", "replicatedJobs")
    if not isinstance(replicated, list) or not replicated:
        return False
    return all(_at(entry, "template", "spec", "template", "spec", "schedulingGroup", "podGroupName") == name
               for entry in replicated)


def with_group(jobset: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``jobset`` whose every pod template names the PodGroup ``<jobset name>`` in
    ``spec.schedulingGroup.podGroupName``."""
    grouped = json_copy(jobset)
    name = grouped["metadata"]["name"]
    for replicated in grouped["spec"]["replicatedJobs"]:
        pod_spec = _object(_object(_object(_object(replicated, "template"), "spec"), "template"), "spec")
        pod_spec["schedulingGroup"] = {"podGroupName": name}
    return grouped


def _object(node: dict[str, Any], key: str) -> dict[str, Any]:
    """``node[key]``, set to ``{}`` first when unset or null (the spec checks refused any other type)."""
    if node.get(key) is None:
        node[key] = {}
    return node[key]


def build_podgroup(jobset: Mapping[str, Any]) -> dict[str, Any]:
    """The PodGroup of ``jobset``'s attempt: same name, namespace and labels, a gang of
    ``min_count(jobset)``."""
    metadata = jobset["metadata"]
    labels = metadata.get("labels") or {}
    return {"apiVersion": API_VERSION, "kind": KIND,
            "metadata": {"name": metadata["name"], "namespace": metadata["namespace"],
                         "labels": {key: labels[key] for key in (JOB_LABEL, ATTEMPT_LABEL) if key in labels}},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count(jobset)}}}}


def as_observed(podgroup: Mapping[str, Any]) -> dict[str, Any]:
    """The child that keeps an observed PodGroup as it is: identity, labels and spec."""
    return kept_child(podgroup, API_VERSION, KIND)


def mismatch(podgroup: Mapping[str, Any], count: int, job_uid: str) -> tuple[str, ...]:
    """Where observed ``podgroup`` (any shape) is not the gang ``build_podgroup`` makes for an attempt
    of ``count`` pods, in words naming each field: a controller ownerReference that is not the Job's
    (``job_uid``), ``spec.schedulingPolicy`` not a gang of exactly ``count`` (a smaller ``minCount``
    lets the scheduler place the pods apart, a larger one never places them), a field of ``NEVER_SET``
    set, a ``disruptionMode`` other than the default. What the API server fills in (``priority``,
    ``priorityClassName`` and ``preemptionPolicy`` by priority admission, ``disruptionMode`` by its
    default) and the labels are not judged. ``()``: the gang the hooks build."""
    found: list[str] = []
    owners = _at(podgroup, "metadata", "ownerReferences")
    for owner in owners if isinstance(owners, list) else []:
        if isinstance(owner, Mapping) and owner.get("controller") is True and owner.get("uid") != job_uid:
            found.append(f"not owned by this Job (its controller is {owner.get('kind')} {owner.get('name')})")
    policy_ = _at(podgroup, "spec", "schedulingPolicy")
    gang = _at(policy_, "gang")
    if not isinstance(gang, Mapping):
        shown = "basic" if isinstance(policy_, Mapping) and "basic" in policy_ else "unset"
        found.append(f"spec.schedulingPolicy.gang is {shown}, want a gang of minCount {count}")
    elif gang.get("minCount") != count:
        found.append(f"spec.schedulingPolicy.gang.minCount is {gang.get('minCount')}, want {count}")
    spec = _at(podgroup, "spec")
    for key in NEVER_SET:
        if _at(spec, key) not in (None, [], {}):
            found.append(f"spec.{key} is set, the hooks set none")
    disruption = _at(spec, "disruptionMode")
    if disruption not in (None, DEFAULT_DISRUPTION):
        shown = next(iter(disruption)) if isinstance(disruption, Mapping) and disruption else str(disruption)
        found.append(f"spec.disruptionMode is {shown}, want single (the default)")
    return tuple(found)


def _deleting(podgroup: Mapping[str, Any]) -> bool:
    return bool(_at(podgroup, "metadata", "deletionTimestamp"))


def scheduled(podgroup: Mapping[str, Any] | None) -> tuple[str, str, str, str]:
    """What ``podgroup`` says of its placement as ``(status, reason, message, lastTransitionTime)``
    of its scheduling condition (``PODGROUP_SCHEDULED``); all ``""`` when it says nothing yet."""
    for condition in ((podgroup or {}).get("status") or {}).get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") in PODGROUP_SCHEDULED:
            return (str(condition.get("status") or ""), str(condition.get("reason") or ""),
                    str(condition.get("message") or ""), str(condition.get("lastTransitionTime") or ""))
    return "", "", "", ""


@dataclass(frozen=True)
class Placement:
    """What the gang says of an answer (``placement``), as a value: the ``children`` (every JobSet
    the rows answered, with its gang, and the PodGroups; a JobSet held for its group left out),
    ``condition`` (``GangScheduled`` as it is once set, its ``since`` the transition time; ``None``:
    unchanged) and, when it holds, ``hold`` (``Hold``). ``hooks.core.decide`` turns it into a
    ``hooks.core.lifecycle.Step``: the gang writes nothing itself."""

    children: tuple[dict[str, Any], ...]
    condition: ConditionChange | None = None
    hold: Hold | None = None


@dataclass(frozen=True)
class Hold:
    """The gang holds the Job ``Pending`` and says why in ``message``: ``stops`` when nothing of the
    attempt is created but what the answer already holds (a JobSet that waits for its PodGroup, or
    for the API: ``held``, no workload, a resync); else the attempt's JobSet runs but none of its pods
    is placed (the scheduler: the outcome stays the row's)."""

    message: str
    stops: bool


def placement(ctx: Context, work: Work) -> Placement | None:
    """Gives every JobSet the rows put in ``work.children`` its gang, and says where the current
    attempt's gang stands (module doc). Reads the call and the work as the row left it (children,
    attempt, conditions, phase, outcome); writes nothing. Returns the ``Placement``, or ``None``
    for a Job without a gang and without a ``GangScheduled`` condition, so such an answer is
    exactly what the rows decided."""
    observed = ctx.observed
    groups = {pg["metadata"]["name"]: pg for pg in observed.podgroups}
    wanted = policy(observed.spec, observed.gang.default_policy) == GANG
    had = cond.get_condition(work.conditions, CONDITION) is not None
    if not (wanted or groups or had):
        return None
    said = _Said(work.conditions, work.kind == Outcome.HELD, work.phase, None)
    children: list[dict[str, Any]] = []
    gangs: list[dict[str, Any]] = []
    jobsets = {js["metadata"]["name"]: js for js in observed.jobsets}
    for child in work.children:
        if child.get("kind") != JOBSET_KIND:
            children.append(child)
            continue
        name = child["metadata"]["name"]
        existing = jobsets.get(name)
        on = names_group(existing) if existing is not None else wanted
        is_current = name == workload_name(ctx.job, work.attempt)
        if on and existing is None and not observed.podgroups_enabled:
            if when_unavailable(observed.spec) == WAIT:
                said = _wait(ctx, said, name)
                continue
            said = _say(ctx, said, cond.FALSE, STARTED_WITHOUT_GANG,
                        f"started JobSet {name} without a gang: {_unavailable_words(ctx)}")
            children.append(child)
            continue
        if on:
            child = child if names_group(child) else with_group(child)
            observed_group = groups.get(name)
            wrong = mismatch(observed_group, min_count(child), observed.uid) if observed_group is not None else ()
            gangs.append(as_observed(observed_group) if observed_group is not None else build_podgroup(child))
            if existing is None and (observed_group is None or wrong or _deleting(observed_group)):
                said = _hold_for_group(ctx, said, child, observed_group, wrong)  # the group first: no JobSet yet
                continue
            if is_current:
                said = _report(ctx, work, said, child, observed_group, wrong)
        elif is_current and had:
            reason = (cond.get_condition(said.conditions, CONDITION) or _NO_CONDITION).reason
            if reason != STARTED_WITHOUT_GANG:
                said = _say(ctx, said, cond.FALSE, NOT_REQUESTED, f"JobSet {name} runs without a gang")
        children.append(child)
    now = cond.get_condition(said.conditions, CONDITION)
    changed = None if now is None or now == cond.get_condition(work.conditions, CONDITION) else ConditionChange(
        CONDITION, str(now.status), str(now.reason), str(now.message),
        since=str(now.last_transition_time))
    return Placement(tuple(children + gangs), changed, said.hold)


class _Said(NamedTuple):
    """What the gang has said so far in one ``placement``: the conditions with ``GangScheduled`` as
    set, whether the answer holds (the row's outcome, or a ``Hold`` that stops), the phase (the
    row's, or ``Pending`` once held) and the hold."""

    conditions: cond.Conditions
    held: bool
    phase: str
    hold: Hold | None


_NO_CONDITION = Condition(type=CONDITION)


def _unavailable_words(ctx: Context) -> str:
    note = ctx.observed.gang.api_note
    return NOT_LISTED + (f" ({note})" if note else "")


def _wait(ctx: Context, said: _Said, name: str) -> _Said:
    """``whenUnavailable: Wait``: the JobSet that would be created is not; the Job stays Pending."""
    return _hold(ctx, said, UNAVAILABLE,
                 f"not creating JobSet {name}: the Job asks for a gang and {_unavailable_words(ctx)}")


def _hold_for_group(ctx: Context, said: _Said, jobset: Mapping[str, Any], podgroup: Mapping[str, Any] | None,
                    wrong: tuple[str, ...]) -> _Said:
    """The new JobSet ``jobset`` is not created yet: its PodGroup (``podgroup``, observed or not) is
    not among the Job's children, is being deleted, or is not the gang the hooks build (``wrong``,
    ``mismatch``'s words). The Job stays Pending and says which (module doc)."""
    name, count = jobset["metadata"]["name"], min_count(jobset)
    if podgroup is None:
        return _hold(ctx, said, WAITING_FOR_PODGROUP,
                     f"creating PodGroup {name} (gang of {count} pods) before JobSet {name}: the JobSet comes once "
                     f"the PodGroup is among this Job's children; if it never comes, a PodGroup {name} this Job "
                     "does not own is in the way (Metacontroller ignores AlreadyExists): delete it")
    if wrong:
        return _hold(ctx, said, MISMATCH,
                     f"not creating JobSet {name}: PodGroup {name} is not the gang of {count} pods the hooks build "
                     f"({'; '.join(wrong)}) and the JobSet's pods would name it: fix it or delete it")
    return _hold(ctx, said, WAITING_FOR_PODGROUP,
                 f"PodGroup {name} is being deleted: JobSet {name} and its own PodGroup come once it is gone")


def _hold(ctx: Context, said: _Said, reason: str, words: str) -> _Said:
    """Nothing of the attempt is created but what the answer already holds: ``GangScheduled=False``
    ``reason`` saying ``words``, and a ``Hold`` that stops (the Job Pending, no workload, a resync)."""
    said = _say(ctx, said, cond.FALSE, reason, words)
    return said._replace(held=True, phase=PENDING, hold=Hold(bounded(f"waiting: {words}"), stops=True))


def _report(ctx: Context, work: Work, said: _Said, jobset: Mapping[str, Any], podgroup: Mapping[str, Any] | None,
            wrong: tuple[str, ...] = ()) -> _Said:
    """``GangScheduled`` for the current attempt from its PodGroup. A PodGroup that is not the gang
    the hooks build (``wrong``: ``mismatch``'s words) is never claimed, whatever it says: ``GangMismatch``
    and the attempt runs on. While the gang is not placed and none of the attempt's pods is bound (the
    cached pods' ``spec.nodeName``), the Job is ``Pending`` (its pods exist, but wait for the
    scheduler: not ``Running``) and its message says why (a ``Hold`` that does not stop), naming the
    nodes the attempt keeps out, if any (``hooks.core.exclusion.gang_words``: a gang that cannot fit
    because of them says so)."""
    name = jobset["metadata"]["name"]
    count = min_count(jobset)
    if wrong:
        return _say(ctx, said, cond.FALSE, MISMATCH,
                    f"PodGroup {name} is not the gang of {count} pods the hooks build ({'; '.join(wrong)}): the "
                    f"scheduler may place its pods apart; JobSet {name} runs on (its pods name the group for life: "
                    "the hooks neither replace nor change it)")
    status, reason, message, since = scheduled(podgroup)
    if status == cond.TRUE:
        return _say(ctx, said, cond.TRUE, reason or SCHEDULED,
                    f"PodGroup {name} placed: the scheduler bound its gang of {count} pods together", since)
    placed = _bound(ctx, work, name)
    if not status and placed:
        return _say(ctx, said, cond.FALSE, NOT_REPORTED,
                    f"{placed} pods of JobSet {name} are bound while PodGroup {name} reports no placement: the gang "
                    "was probably not used (the API server dropped spec.schedulingGroup, or kube-scheduler runs "
                    "without the GenericWorkload gate)")
    excluded = exclusion.gang_words(exclusion.excluded_by(jobset), message)
    if not status:
        words = f"PodGroup {name} (gang of {count} pods) waits for the scheduler{excluded}"
        said = _say(ctx, said, cond.FALSE, WAITING, words)
    else:
        shown = "none" if placed == 0 else "an unknown number" if placed is None else str(placed)
        words = (f"PodGroup {name}: {shown} of its {count} pods bound{excluded}: {reason}"  # the hooks' words first:
                 + (f": {message}" if message else ""))  # the scheduler's may be long, and are cut
        said = _say(ctx, said, cond.FALSE, reason or WAITING, words, since)
    if placed == 0 and not said.held and said.phase in (PENDING, RUNNING):
        return said._replace(phase=PENDING, hold=Hold(bounded(f"waiting for the scheduler to place the gang: {words}"),
                                                      stops=False))
    return said


def _bound(ctx: Context, work: Work, jobset: str) -> int | None:
    """How many active pods of the current attempt (its attempt label, or JobSet's name label
    ``jobset``) are bound to a node, from the cache (the read ``reads.counted`` made: a cache hit);
    ``None`` when the read fails (nothing is decided on it)."""
    try:
        pods = ctx.reader.job_pods(ctx.namespace, ctx.job)
    except PodReadError:
        return None
    attempt = str(work.attempt)
    return sum(1 for pod in pods if is_active(pod) and (pod.get("spec") or {}).get("nodeName")
               and _of_attempt((pod.get("metadata") or {}).get("labels") or {}, attempt, jobset))


def _of_attempt(labels: Mapping[str, Any], attempt: str, jobset: str) -> bool:
    return labels.get(ATTEMPT_LABEL) == attempt or labels.get(JOBSET_NAME_LABEL) == jobset


def _say(ctx: Context, said: _Said, status: str, reason: str, message: str, since: str = "") -> _Said:
    """``said`` with ``GangScheduled`` set. ``since``: the PodGroup's own ``lastTransitionTime`` for
    this status, evidence that is the same in every call (a status from a stale parent never moves it
    back and forth); else it moves only when the status changes (``conditions.set_condition``)."""
    previous = cond.get_condition(said.conditions, CONDITION)
    if since and apitime.admitted(since) and (previous is None or previous.status != status
                                              or previous.last_transition_time != since):
        updated = Condition(type=CONDITION, status=status, reason=reason, message=bounded(message),
                            last_transition_time=since)
        return said._replace(conditions=cond.sort_conditions([*(c for c in said.conditions if c.type != CONDITION),
                                                              updated]))
    return said._replace(conditions=cond.set_condition(said.conditions, CONDITION, status, reason, bounded(message),
                                                       ctx.stamp))
