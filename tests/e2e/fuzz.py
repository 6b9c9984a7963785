"""Bad input for the hooks: valid requests with one part broken, and bytes that are not requests.

A ``Mutation`` (base request, path, operation, value) is drawn either by hypothesis
(``mutations()``, tests/e2e/test_fuzz_hooks.py) or by ``random_mutation`` (the soak); ``check_answer``
judges what the server said:

- never a 5xx, never a traceback in the body;
- a 4xx is exactly ``{"error": "<non-empty>"}``;
- a 200 has a ``status`` object and a ``children`` list, and never drops an observed current JobSet
  outside a teardown: when the answer's phase is not Restarting/Suspending/Suspended/Terminating,
  the observed JobSet of the request's attempt is in ``children`` (unless a newer observed one was
  adopted).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from hypothesis import strategies as st

from hooks.core.historyentry import TIME_KEYS as HISTORY_TIMES
from podread import ATTEMPT_LABEL, JOB_LABEL, reader_from_snapshot
from tests.e2e.cluster import clone
from tests.e2e.harness import job_spec
from tests.e2e.invariants import TEARDOWN_PHASES
from tests.fakekube import make_job_pods
from tests.support import JOB_CREATED
from tests.support.timespellings import ADMITTED, REFUSED
from tests.support.uids import uid

GROUP = "JobSet.jobset.x-k8s.io/v1alpha2"
JOB = "fz"
NAMESPACE = "fuzz"
MISSING = object()


def jobset(attempt: int, state: str = "") -> dict[str, Any]:
    """An observed JobSet of attempt ``attempt``; ``state`` ``Failed``/``Completed`` makes it terminal."""
    obj: dict[str, Any] = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": f"{JOB}-{attempt}", "namespace": NAMESPACE, "uid": uid(f"jobset/{JOB}-{attempt}"),
                     "labels": {JOB_LABEL: JOB, ATTEMPT_LABEL: str(attempt)}},
        "spec": {"replicatedJobs": job_spec(2)["replicatedJobs"], "failurePolicy": {"maxRestarts": 0}},
        "status": {},
    }
    if state:
        obj["status"] = {"terminalState": state, "conditions": [{"type": state, "status": "True"}]}
    return obj


def base_request(kind: str, version: str = "v1") -> dict[str, Any]:
    """A valid request: ``kind`` is one of ``BASES``."""
    status: dict[str, Any] = {"phase": "Running", "attempt": 1, "restarts": 1, "workload": f"{JOB}-1",
                              "activePods": 2, "message": "",
                              "conditions": [{"type": "Drained", "status": "True", "reason": "NoActivePods",
                                              "message": "", "lastTransitionTime": "2025-01-01T00:00:00Z"}]}
    children: list[dict[str, Any]] = [jobset(1)]
    spec = job_spec(2, max_restarts=2)
    finalizing = False
    if kind == "fresh":
        status, children = {}, []
    elif kind == "failed":
        children = [jobset(1, "Failed")]
    elif kind == "completed":
        children = [jobset(1, "Completed")]
    elif kind == "suspended":
        status.update(phase="Suspended", workload="")
        children = []
    elif kind == "restarting":
        status.update(phase="Restarting", workload="")
    elif kind == "finalizing":
        finalizing = True
    elif kind == "mpi":
        spec = job_spec(2, launcher=True)
    elif kind == "adopt":
        children = [jobset(1), jobset(2)]
    group = {}
    for child in children:
        meta = child["metadata"]
        group[meta["name"] if version == "v1" else f"{meta['namespace']}/{meta['name']}"] = child
    parent: dict[str, Any] = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
        "metadata": {"name": JOB, "namespace": NAMESPACE, "uid": uid(f"job/{JOB}"), "generation": 3,
                     "creationTimestamp": JOB_CREATED},
        "spec": spec, "status": status,
    }
    if finalizing:
        parent["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    return {"controller": {"metadata": {"name": "nvcre-jobs"}}, "parent": parent, "children": {GROUP: group},
            "related": {}, "finalizing": finalizing}


BASES = ("fresh", "running", "failed", "completed", "suspended", "restarting", "finalizing", "mpi", "adopt")

_RJ = ("parent", "spec", "replicatedJobs", 0)
_CHILD = ("children", GROUP, "@child")
PATHS: tuple[tuple[Any, ...], ...] = (
    (), ("parent",), ("parent", "apiVersion"), ("parent", "kind"), ("parent", "metadata"),
    ("parent", "metadata", "name"), ("parent", "metadata", "namespace"), ("parent", "metadata", "generation"),
    ("parent", "metadata", "deletionTimestamp"), ("parent", "spec"), ("parent", "spec", "replicatedJobs"),
    _RJ, (*_RJ, "name"), (*_RJ, "replicas"), (*_RJ, "template"), (*_RJ, "template", "spec"),
    (*_RJ, "template", "spec", "completions"), (*_RJ, "template", "spec", "template"),
    (*_RJ, "template", "spec", "template", "metadata"), (*_RJ, "template", "spec", "template", "metadata", "labels"),
    ("parent", "spec", "launcher"), ("parent", "spec", "maxRestarts"), ("parent", "spec", "suspend"),
    ("parent", "status"), ("parent", "status", "phase"), ("parent", "status", "attempt"),
    ("parent", "status", "restarts"), ("parent", "status", "workload"), ("parent", "status", "activePods"),
    ("parent", "status", "message"), ("parent", "status", "conditions"), ("parent", "status", "conditions", 0),
    ("parent", "status", "conditions", 0, "type"), ("parent", "status", "conditions", 0, "status"),
    ("parent", "status", "conditions", 0, "lastTransitionTime"), ("parent", "status", "startTime"),
    ("parent", "status", "completionTime"), ("parent", "status", "attempts"),
    ("children",), ("children", GROUP), _CHILD, (*_CHILD, "metadata"), (*_CHILD, "metadata", "name"),
    (*_CHILD, "metadata", "namespace"), (*_CHILD, "metadata", "labels"),
    (*_CHILD, "metadata", "labels", ATTEMPT_LABEL), (*_CHILD, "metadata", "deletionTimestamp"),
    (*_CHILD, "status"), (*_CHILD, "status", "terminalState"), (*_CHILD, "status", "conditions"),
    (*_CHILD, "status", "conditions", 0), (*_CHILD, "status", "conditions", 0, "type"),
    (*_CHILD, "status", "conditions", 0, "status"), ("finalizing",), ("related",), ("controller",),
)
OPERATIONS = ("replace", "delete", "extra")


def _deep(depth: int) -> Any:
    value: Any = "bottom"
    for level in range(depth):
        value = [value] if level % 2 else {"d": value}
    return value


SPECIAL_VALUES: tuple[Any, ...] = (
    None, True, False, 0, -1, 1, 2**63 - 1, -(2**63), 1.5, -0.0, 1e308, "", "x" * 70, "a" * 300_000,
    "Ünïcødé-名前-🚀", "\u0000\u202e\ud7ff", "fz-1", "Failed", "Completed", "True", "../../etc", "fz",
    [], [None], [{}], {}, {"": None}, {"name": 7}, _deep(40), _deep(200), [[[[[[]]]]]],
    *ADMITTED.values(), *REFUSED.values(),
    [{"attempt": 1, "jobSet": f"{JOB}-1", **dict.fromkeys(HISTORY_TIMES, text)} for text in ADMITTED.values()],
)
"""Besides the odd values: every status time spelling the API server admits (``timespellings``),
and a history whose entries carry each of them in every time key."""

json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=80),
)
json_values = st.one_of(
    st.sampled_from(SPECIAL_VALUES),
    st.recursive(json_leaf, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                    st.dictionaries(st.text(max_size=12), inner, max_size=4)),
                 max_leaves=12),
)


@dataclass(frozen=True)
class Mutation:
    """One broken request: ``base`` (from ``BASES``) in hook ``version``, ``operation`` at ``path``."""

    base: str
    version: str
    path: tuple[Any, ...]
    operation: str
    value: Any = None
    hook: str = "sync"

    def request(self) -> Any:
        """The mutated request document (may be anything JSON, not only an object)."""
        document: Any = base_request(self.base, self.version)
        return apply_mutation(document, self.path, self.operation, self.value)


def apply_mutation(document: Any, path: tuple[Any, ...], operation: str, value: Any) -> Any:
    """Applies ``operation`` (replace/delete/extra) at ``path`` of ``document``; returns the result.
    A path that does not exist in this base is created where possible, or left alone."""
    if not path:
        return clone(value) if operation == "replace" else document
    node = document
    for key in path[:-1]:
        key = _resolve(node, key)
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            return document
    last = _resolve(node, path[-1])
    if operation == "replace":
        if isinstance(node, dict) or (isinstance(node, list) and isinstance(last, int) and last < len(node)):
            node[last] = clone(value)
    elif operation == "delete":
        if isinstance(node, dict):
            node.pop(last, None)
        elif isinstance(node, list) and isinstance(last, int) and last < len(node):
            node.pop(last)
    else:
        target = node.get(last) if isinstance(node, dict) else None
        if isinstance(target, dict):
            target["x-extra-\u00e9"] = clone(value)
        elif isinstance(target, list):
            target.append(clone(value))
    return document


def _resolve(node: Any, key: Any) -> Any:
    """``@child`` is the first key of the children group (whatever its keying)."""
    if key == "@child":
        return next(iter(node), "none") if isinstance(node, dict) else 0
    return key


RAW_BODIES: tuple[bytes, ...] = (
    b"", b" ", b"null", b"[]", b"0", b'"parent"', b"{", b'{"parent": ', b"\xff\xfe\x00", b"\x00" * 10,
    b'{"parent": NaN}', b'{"parent": Infinity}', b"{'parent': 1}", b'{"parent": 1e999999}',
    b'{"a": 123456789012345678901234567890}', b"[" * 100 + b"]" * 100, b"[" * 5000 + b"]" * 5000,
    b'{"parent": {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job"}}', b"\xef\xbb\xbf{}",
    "{\"parent\": \"\ud800\"}".encode("utf-8", "surrogatepass"),
)


@st.composite
def mutations(draw: st.DrawFn) -> Mutation:
    """A hypothesis strategy of ``Mutation``s."""
    return Mutation(
        base=draw(st.sampled_from(BASES)),
        version=draw(st.sampled_from(["v1", "v2"])),
        path=draw(st.sampled_from(PATHS)),
        operation=draw(st.sampled_from(OPERATIONS)),
        value=draw(json_values),
        hook=draw(st.sampled_from(["sync", "finalize"])),
    )


def random_value(rng: random.Random, depth: int = 0) -> Any:
    """A random JSON value (the soak's counterpart of ``json_values``)."""
    roll = rng.random()
    if roll < 0.35:
        return rng.choice(SPECIAL_VALUES)
    if roll < 0.5 and depth < 3:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if roll < 0.65 and depth < 3:
        return {rng.choice(["name", "type", "", "ü", "x"]): random_value(rng, depth + 1) for _ in range(3)}
    return rng.choice([None, rng.random() < 0.5, rng.randint(-(2**63), 2**63 - 1), rng.uniform(-1e9, 1e9),
                       "".join(chr(rng.randint(32, 0x2FFF)) for _ in range(rng.randint(0, 40)))])


def random_mutation(rng: random.Random) -> Mutation:
    """A random ``Mutation`` (the soak's counterpart of ``mutations()``)."""
    return Mutation(rng.choice(BASES), rng.choice(["v1", "v2"]), rng.choice(PATHS), rng.choice(OPERATIONS),
                    random_value(rng), rng.choice(["sync", "finalize"]))


def encode(document: Any) -> bytes:
    """The request bytes (orjson refuses integers beyond 64 bits: those go through ``json``)."""
    try:
        return orjson.dumps(document)
    except (orjson.JSONEncodeError, TypeError):
        import json

        return json.dumps(document).encode()


def fuzz_reader() -> Any:
    """A Reader whose cache and API server both hold the Job's pods of attempt 1 (two running)."""
    pods = make_job_pods(JOB, 2, NAMESPACE, attempt=1)
    return reader_from_snapshot({"cache": {"pods": pods}, "live": {"pods": pods}})


def check_answer(request: Any, code: int, body: bytes) -> list[str]:
    """What is wrong with the answer ``code``/``body`` to ``request`` (the decoded document, or
    ``MISSING`` for raw bytes); empty when it is fine."""
    problems: list[str] = []
    text = body.decode("utf-8", "replace")
    if code >= 500:
        problems.append(f"{code} answer: {text[:300]}")
    if "Traceback" in text or 'File "' in text:
        problems.append(f"traceback in the body: {text[:300]}")
    try:
        answer = orjson.loads(body)
    except orjson.JSONDecodeError:
        return [*problems, f"{code} body is not JSON: {text[:200]}"]
    if 400 <= code < 500:
        if not (isinstance(answer, dict) and set(answer) == {"error"} and isinstance(answer["error"], str)
                and answer["error"]):
            problems.append(f"{code} body is not {{'error': ...}}: {text[:200]}")
        return problems
    if code != 200:
        return problems if code == 500 else [*problems, f"unexpected status {code}"]
    if not isinstance(answer, dict) or not isinstance(answer.get("status"), dict) \
            or not isinstance(answer.get("children"), list):
        return [*problems, f"200 without status or children: {text[:200]}"]
    problems += _dropped_current(request, answer)
    return problems


def _dropped_current(request: Any, answer: Mapping[str, Any]) -> list[str]:
    """A 200 in a non-teardown phase must keep the observed JobSet of the request's attempt (or
    have adopted a newer observed one), unless that JobSet is being deleted: Metacontroller skips a
    child already being deleted, so leaving it out deletes nothing."""
    status = answer["status"]
    if status.get("phase") in TEARDOWN_PHASES:
        return []
    try:
        parent = request["parent"]
        job = parent["metadata"]["name"]
        prior = parent.get("status") or {}
        attempt = prior.get("attempt", 0) or 0
        group = request["children"][GROUP]
        observed = {str((child.get("metadata") or {}).get("name") or key.rpartition("/")[2])
                    for key, child in group.items() if not (child.get("metadata") or {}).get("deletionTimestamp")}
    except (KeyError, TypeError, AttributeError):
        return []
    current = f"{job}-{attempt}"
    kept = {(child.get("metadata") or {}).get("name") for child in answer["children"] if isinstance(child, dict)}
    if current in observed and current not in kept:
        adopted = f"{job}-{status.get('attempt')}"
        if not (isinstance(status.get("attempt"), int) and status["attempt"] > attempt and adopted in observed
                and adopted in kept):
            return [f"200 {status.get('phase')} dropped the observed current JobSet {current}"]
    return []
