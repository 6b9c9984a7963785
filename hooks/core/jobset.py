"""Build the JobSet child of an NVCRE Job for one attempt (design §3), or say why the spec cannot be one.

Pure: reads a Job mapping, returns a new dict; the input is never modified.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import orjson

from hooks.core.declared import InvalidRequest
from hooks.core.request import Spec, range_of, read_spec
from podread.attempts import workload_name
from podread.constants import ATTEMPT_LABEL, JOB_LABEL, LAUNCHER_LABEL

API_VERSION = "jobset.x-k8s.io/v1alpha2"
KIND = "JobSet"
MAX_ATTEMPT = 9999
"""The last attempt a Job can reach. Names are validated for it (``<job>-9999-...``), so a name
that fits attempt 0 fits every attempt; a restart or resume that would need attempt 10000 ends
the Job Failed (``hooks.core.decide``, reason ``AttemptLimitReached``) instead of parking it."""


def is_last_attempt(attempt: int) -> bool:
    """Whether ``attempt`` is the last a Job can have (``MAX_ATTEMPT``): no step may start another.
    The one reading of the limit: the rows ask it before a step that starts attempt+1
    (``hooks.core.rows.terminal.limit_reached``), and ``hooks.core.claims`` asks it of a status
    that says the limit was reached."""
    return attempt >= MAX_ATTEMPT
JOBSET_CONTROLLER = "jobset.sigs.k8s.io/jobset-controller"
"""The ``managedBy`` value of JobSet's own controller (anything else: the JobSet runs elsewhere)."""
JOB_CONTROLLER = "kubernetes.io/job-controller"
"""The ``managedBy`` value of the batch Job controller of this cluster."""
MAX_POD_COUNT = 2**31 - 1
"""JobSet's limit on ``replicas x parallelism`` of one replicated job."""
_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_MAX_NAME = 63
_POD_SUFFIX = "abcde"  # the 5-character random suffix the Job controller appends to pod names


class InvalidSpec(Exception):
    """The Job's spec cannot be turned into a JobSet.

    ``reason`` is the human explanation (the condition message); ``code`` a CamelCase word for the
    condition's ``reason`` field.
    """

    def __init__(self, reason: str, code: str = "InvalidSpec") -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code


def json_copy(value: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of a JSON object (4-8x faster than ``copy.deepcopy``; the input came from JSON)."""
    return orjson.loads(orjson.dumps(value))


def kept_child(observed: Mapping[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    """The child that keeps an observed object as it is (a Workload, a PodGroup): its identity, its
    labels and a copy of its spec; ``api_version``/``kind`` when the object names none."""
    metadata = observed["metadata"]
    kept: dict[str, Any] = {"name": metadata["name"], "namespace": metadata["namespace"]}
    if metadata.get("labels"):
        kept["labels"] = dict(metadata["labels"])
    return {"apiVersion": observed.get("apiVersion") or api_version, "kind": observed.get("kind") or kind,
            "metadata": kept, "spec": json_copy(observed.get("spec") or {})}


def spec_of(job: Mapping[str, Any]) -> Spec:
    """The typed spec of ``job``: ``job["spec"]`` when it is a ``Spec`` already (the decision's Job,
    ``Observed.spec``), else the raw mapping a Job built by hand carries (the CRD cross-check, the
    tests) read as a request's spec is (``hooks.core.request.read_spec``). Raises ``InvalidSpec``
    when it is not an object, or holds a field of the wrong JSON type (a 400 in a request, which
    never gets here)."""
    spec = job.get("spec") or None
    if spec is not None and not isinstance(spec, Spec | Mapping):
        raise InvalidSpec("spec must be an object", "InvalidSpec")
    try:
        return read_spec(spec)
    except InvalidRequest as refused:
        raise InvalidSpec(refused.message, "InvalidSpec") from None


def build_jobset(job: Mapping[str, Any], attempt: int) -> dict[str, Any]:
    """Returns the JobSet for ``attempt`` of ``job`` (an NVCRE Job: ``metadata.name``,
    ``metadata.namespace``, ``spec``: typed or raw, ``spec_of``). The replicated jobs are the raw
    templates the user wrote, checked here and copied into the JobSet.

    Raises ``InvalidSpec`` when the spec has no replicated jobs, an entry without a name or
    template, a template whose parts the hooks write into have the wrong type (the pod template
    and pod spec not objects, ...: ``_check_template_shape``), duplicate names, replicas,
    parallelism or completions that are not non-negative integers (``null`` is unset),
    ``replicas x parallelism`` over JobSet's limit (``TooManyPods``), a launcher that names
    no entry, a negative ``maxRestarts``, a ``managedBy`` that hands the workload to another
    controller (``ManagedElsewhere``: MultiKueue would run the pods in another cluster, where the
    drain barrier reads nothing), names JobSet derives that are not DNS-1035 labels
    (``InvalidName``) or longer than 63 characters at the worst attempt, ``MAX_ATTEMPT``
    (``NameTooLong``), or ``attempt`` beyond ``MAX_ATTEMPT`` (``AttemptLimitReached``). The name
    checks follow JobSet's webhook (jobset-mpi-cache-facts §F) and do not depend on ``attempt``.
    """
    metadata = job.get("metadata") or {}
    name = str(metadata.get("name", ""))
    namespace = str(metadata.get("namespace", ""))
    spec = spec_of(job)
    entries = _check_entries(spec.replicated_jobs)
    launcher = _check_launcher(spec.launcher, entries)
    _check_max_restarts(spec.max_restarts)
    _check_managed_by(spec.managed_by, "spec.managedBy", JOBSET_CONTROLLER)
    check_names(name, entries)
    if attempt > MAX_ATTEMPT:
        raise InvalidSpec(f"attempt {attempt} is beyond the last attempt a Job can have ({MAX_ATTEMPT})",
                          "AttemptLimitReached")
    jobset_name = workload_name(name, attempt)
    attempt_value = str(attempt)
    replicated_jobs = []
    for entry in entries:
        replicated = json_copy(entry)
        _label_pod_template(replicated, job=name, attempt=attempt_value, is_launcher=entry["name"] == launcher)
        replicated_jobs.append(replicated)
    jobset_spec: dict[str, Any] = {"replicatedJobs": replicated_jobs, "failurePolicy": {"maxRestarts": 0}}
    if launcher:
        jobset_spec["successPolicy"] = {"operator": "Any", "targetReplicatedJobs": [launcher]}
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": jobset_name,
            "namespace": namespace,
            "labels": {JOB_LABEL: name, ATTEMPT_LABEL: attempt_value},
        },
        "spec": jobset_spec,
    }


def _check_entries(raw: object) -> list[Mapping[str, Any]]:
    """Checks ``spec.replicatedJobs``: a non-empty list of objects, each with a unique non-empty
    string ``name``, an object ``template`` and non-negative integer ``replicas`` (when set).
    Returns the entries.
    """
    if not isinstance(raw, list) or not raw:
        raise InvalidSpec("spec.replicatedJobs must list at least one replicated job", "NoReplicatedJobs")
    seen: set[str] = set()
    for index, entry in enumerate(raw):
        path = f"spec.replicatedJobs[{index}]"
        if not isinstance(entry, Mapping):
            raise InvalidSpec(f"{path} must be an object", "InvalidReplicatedJob")
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidSpec(f"{path} has no name", "InvalidReplicatedJob")
        if not isinstance(entry.get("template"), Mapping):
            raise InvalidSpec(f"{path} ({name}) has no template", "InvalidReplicatedJob")
        if name in seen:
            raise InvalidSpec(f"spec.replicatedJobs names {_shown(name, 70)} more than once", "DuplicateReplicatedJob")
        seen.add(name)
        replicas = _given(entry.get("replicas"), 1)
        if not _count(replicas):
            raise InvalidSpec(f"{path}.replicas ({name}) must be a non-negative integer, got {_shown(replicas)}",
                              "InvalidReplicas")
        _check_template_shape(entry["template"], f"{path}.template", name)
        job_spec = entry["template"].get("spec") or {}
        for key in ("parallelism", "completions"):
            value = job_spec.get(key)
            if value is not None and not _count(value):
                raise InvalidSpec(f"{path}.template.spec.{key} ({name}) must be a non-negative integer, got "
                                  f"{_shown(value)}", "InvalidReplicatedJob")
        parallelism = _given(job_spec.get("parallelism"), 1)
        if replicas * parallelism > MAX_POD_COUNT:
            raise InvalidSpec(f"{path} ({name}): replicas x parallelism is {replicas * parallelism}, over "
                              f"JobSet's limit of {MAX_POD_COUNT}", "TooManyPods")
        _check_managed_by(job_spec.get("managedBy"), f"{path}.template.spec.managedBy", JOB_CONTROLLER)
    return list(raw)


def _given(value: Any, default: int) -> Any:
    """``value``, or ``default`` when it is unset (``None``: JSON ``null`` is unset, as the API
    server prunes a null it does not allow and then applies the default)."""
    return default if value is None else value


def count_of(node: Mapping[str, Any], key: str, default: int = 1) -> int:
    """A checked count of a replicated job (``replicas``) or of its ``template.spec``
    (``parallelism``, ``completions``), ``default`` when unset or null. Only for entries
    ``build_jobset`` accepted."""
    value = node.get(key)
    return default if value is None else int(value)


def _count(value: object) -> bool:
    """Whether ``value`` is a non-negative integer (a boolean is not)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _shown(value: object, limit: int = 40) -> str:
    """``repr(value)`` cut to ``limit`` characters, so a message stays short whatever the input."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _check_managed_by(raw: object, path: str, own: str) -> None:
    """Checks a ``managedBy`` field: unset, or ``own`` (the controller of this cluster)."""
    if raw is None or raw == own:
        return
    raise InvalidSpec(f"{path} is {_shown(raw, 70)}: only {own} may manage the workload (another controller "
                      "would run its pods where the drain barrier cannot see them)", "ManagedElsewhere")


def _check_template_shape(template: Mapping[str, Any], path: str, name: str) -> None:
    """Checks the parts of a replicated job's template the hooks read or write, when present: the
    Job template's ``metadata`` is an object and its ``labels`` a map of strings; the
    Job spec, the pod template, its ``metadata`` and the pod spec are objects; the pod template's
    ``labels`` and ``annotations`` and the pod spec's ``nodeSelector`` are maps of strings; its
    ``tolerations`` a list of objects. Labelling (and Kueue's admission) then never replaces user
    data, never fails on a wrong type, and never emits a JobSet its API would refuse for them.
    Raises ``InvalidSpec`` (``InvalidReplicatedJob``) naming the field.
    """
    job_metadata = _object_at(template, "metadata", f"{path}.metadata", name)
    _string_map_at(job_metadata, "labels", f"{path}.metadata.labels", name)
    job_spec = _object_at(template, "spec", f"{path}.spec", name)
    pod_template = _object_at(job_spec, "template", f"{path}.spec.template", name)
    where = f"{path}.spec.template"
    metadata = _object_at(pod_template, "metadata", f"{where}.metadata", name)
    for key in ("labels", "annotations"):
        _string_map_at(metadata, key, f"{where}.metadata.{key}", name)
    pod_spec = _object_at(pod_template, "spec", f"{where}.spec", name)
    _string_map_at(pod_spec, "nodeSelector", f"{where}.spec.nodeSelector", name)
    tolerations = pod_spec.get("tolerations")
    if tolerations is not None and (not isinstance(tolerations, list) or
                                    not all(isinstance(item, Mapping) for item in tolerations)):
        raise InvalidSpec(f"{where}.spec.tolerations ({name}) must be a list of objects, got {_shown(tolerations)}",
                          "InvalidReplicatedJob")


def _object_at(node: Mapping[str, Any], key: str, path: str, name: str) -> Mapping[str, Any]:
    """``node[key]`` when it is an object, ``{}`` when unset; ``InvalidSpec`` otherwise."""
    value = node.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidSpec(f"{path} ({name}) must be an object, got {_shown(value)}", "InvalidReplicatedJob")
    return value


def _string_map_at(node: Mapping[str, Any], key: str, path: str, name: str) -> None:
    """``node[key]`` must be unset or a map of strings; ``InvalidSpec`` otherwise."""
    value = _object_at(node, key, path, name)
    for item, text in value.items():
        if not isinstance(text, str):
            raise InvalidSpec(f"{path} ({name}) must map to strings, got {_shown(text)} for {_shown(item, 70)}",
                              "InvalidReplicatedJob")


def _check_launcher(raw: object, entries: list[Mapping[str, Any]]) -> str:
    """Checks ``spec.launcher``: unset, or the name of one entry. Returns it (``""`` when unset)."""
    if raw is None:
        return ""
    names = sorted(str(entry["name"]) for entry in entries)
    if not isinstance(raw, str) or raw not in names:
        have = ", ".join(names)
        have = have if len(have) <= 200 else have[:197] + "..."
        raise InvalidSpec(f"spec.launcher {_shown(raw, 70)} names no replicated job (have: {have})",
                          "UnknownLauncher")
    return raw


def _check_max_restarts(raw: int | None) -> None:
    """Checks ``spec.maxRestarts``: within its declared range (``hooks.core.request.Spec``: not negative)."""
    if raw is not None and not range_of(Spec, "max_restarts").admits(raw):
        raise InvalidSpec(f"spec.maxRestarts must be a non-negative integer, got {_shown(raw)}", "InvalidMaxRestarts")


def check_names(job: str, entries: list[Mapping[str, Any]]) -> None:
    """Checks every name JobSet derives from ``job`` and ``entries`` at the worst attempt,
    ``MAX_ATTEMPT``, as JobSet's validating webhook does for one JobSet: the longest Job name
    ``<job>-<attempt>-<replicatedJob>-<replicas-1>`` and, for jobs with pods, the longest pod name
    ``<that>-<completions-1>-abcde`` (``completions`` defaults to 1, as the batch API defaults it)
    must be DNS-1035 labels of at most 63 characters. The JobSet name (the ``jobset-name`` label
    value and the headless Service's name) is a prefix of them, so it fits too.

    Raises ``InvalidSpec``: ``InvalidName`` when a name has characters or a start a DNS-1035 label
    cannot have (``my.job``, ``1job``, ``Workers_A``), whatever its length; ``NameTooLong`` when
    only the length is over.
    """
    if not _DNS1035_LABEL.fullmatch(job):
        raise InvalidSpec(f"the Job name {job!r} is not a DNS-1035 label (lowercase letters, digits and '-', "
                          "starting with a letter): JobSet derives its Job, pod and Service names from it",
                          "InvalidName")
    jobset = workload_name(job, MAX_ATTEMPT)
    for index, entry in enumerate(entries):
        replicas = _given(entry.get("replicas"), 1)
        if replicas == 0:
            continue
        rj = str(entry["name"])
        if not re.fullmatch(r"[-a-z0-9]+", rj):
            raise InvalidSpec(f"spec.replicatedJobs[{index}].name {rj[:70]!r} cannot be part of a DNS-1035 label "
                              "(lowercase letters, digits and '-')", "InvalidName")
        longest_job = f"{jobset}-{rj}-{replicas - 1}"
        _check_length("job", longest_job)
        completions = _given((entry["template"].get("spec") or {}).get("completions"), 1)
        if completions:
            _check_length("pod", f"{longest_job}-{completions - 1}-{_POD_SUFFIX}")


def _check_length(kind: str, name: str) -> None:
    """``NameTooLong`` when ``name`` (a DNS-1035 label by construction) is over 63 characters."""
    if len(name) > _MAX_NAME:
        raise InvalidSpec(f"generated {kind} name {name!r} is {len(name)} characters, over the limit of {_MAX_NAME} "
                          f"(names must fit attempt {MAX_ATTEMPT}, the last one; shorten the Job or replicated "
                          "job name)", "NameTooLong")


def _label_pod_template(replicated: dict[str, Any], *, job: str, attempt: str, is_launcher: bool) -> None:
    """Adds this controller's labels to ``replicated`` (a copy, modified in place): on its Job
    template JOB_LABEL, which JobSet copies onto every batch Job it makes, so the drain barrier
    finds the batch Jobs of every attempt by the Job's name alone (``podread.Reader.attempt_jobs``;
    batch Job labels reach no pod); on its pod template JOB_LABEL (or, for the launcher,
    LAUNCHER_LABEL instead) and ATTEMPT_LABEL. User labels stay.
    """
    template = replicated.setdefault("template", {})
    job_metadata = template.get("metadata")
    if job_metadata is None:
        job_metadata = template["metadata"] = {}
    job_metadata["labels"] = {**(job_metadata.get("labels") or {}), JOB_LABEL: job}
    job_spec = template.get("spec")
    if job_spec is None:
        job_spec = template["spec"] = {}
    pod_template = job_spec.get("template")
    if pod_template is None:
        pod_template = job_spec["template"] = {}
    pod_metadata = pod_template.get("metadata")
    if pod_metadata is None:
        pod_metadata = pod_template["metadata"] = {}
    labels = dict(pod_metadata.get("labels") or {})
    if is_launcher:
        labels.pop(JOB_LABEL, None)
        labels[LAUNCHER_LABEL] = job
    else:
        labels.pop(LAUNCHER_LABEL, None)
        labels[JOB_LABEL] = job
    labels[ATTEMPT_LABEL] = attempt
    pod_metadata["labels"] = labels
