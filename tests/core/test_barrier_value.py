"""The drain barrier as a value (``hooks.core.barrier.Drain``), composed into the status in one place,
and what one call reads and builds once (``hooks.core.once``: the barrier's live reads, the JobSet and
the Workload)."""

from __future__ import annotations

import ast
import inspect
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest

import hooks.core.built
import hooks.core.jobset
import hooks.core.queueing
import hooks.core.rows.kueue
from hooks.core import barrier, history, lifecycle
from hooks.core import decide as decide_module
from hooks.core.answer import assemble
from hooks.core.barrier import Drain
from hooks.core.decide import Decision, decide
from hooks.core.observed import parse_request
from hooks.core.once import Once
from hooks.core.rows import deadline, kueue
from hooks.core.stuckwait import NOT_KNOWN
from hooks.core.vocab import Outcome
from hooks.core.wording import MAX_MESSAGE
from hooks.core.work import Context, Work
from podread.errors import PodReadError
from tests.support import FakeReader, job_request, job_spec, jobset_child, make_pod, workload_child

NOW = datetime(2026, 1, 1, tzinfo=UTC)
DRAIN_READS = ("active_job_pods", "active_launcher_pods", "attempt_jobs", "active_attempt_pods")


class Counting:
    """A Reader that counts how often each of its methods is called (``calls``)."""

    def __init__(self, reader: FakeReader) -> None:
        self.reader = reader
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.reader, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return method(*args, **kwargs)

        return counted


def run(reader: FakeReader | Counting, **request: Any) -> Decision:
    observed = parse_request(job_request(**request), "finalize" if request.get("finalizing") else "sync")
    return decide(observed, reader, NOW)


def worker(name: str, attempt: int) -> dict[str, Any]:
    pod = make_pod(name, job="train", workload=f"train-{attempt}", replicated_job="worker")
    pod["metadata"]["labels"]["nvcre.nvidia.com/attempt"] = str(attempt)
    return pod


# ---- read once, build once ----------------------------------------------------------------------------

def test_an_adoption_then_the_barrier_read_each_thing_once() -> None:
    """A lost status write (Restarting at attempt 1, train-2 observed) is adopted with the barrier's live
    reads; the active deadline has passed, so row 3a then runs the barrier over the same attempts.
    The call reads each thing once: the barrier answers from what the adoption read."""
    reader = Counting(FakeReader([worker("train-2-worker-0-0", 2)]))
    d = run(reader, spec={**job_spec(max_restarts=3), "activeDeadlineSeconds": 60},
            status={"phase": "Restarting", "attempt": 1, "restarts": 1, "workload": "",
                    "startTime": "2025-12-31T23:31:00Z"},
            jobsets=[jobset_child("train", 2, created="2025-12-31T23:40:00Z")])
    status = d.response["status"]
    assert (status["attempt"], status["phase"], d.kind) == (2, "Terminating", "held")
    assert status["message"].startswith("deadline exceeded, tearing down: waiting for JobSet train-2 to be deleted")
    assert {method: reader.calls[method] for method in DRAIN_READS} == dict.fromkeys(DRAIN_READS, 1)


def test_a_failed_read_fails_again_for_the_next_row_of_the_call() -> None:
    """The adoption's read failed: it adopts nothing and holds; the error is kept for the call, never
    turned into "no pods" by a second try."""
    reader = Counting(FakeReader(fail={"active_launcher_pods"}))
    ctx = Context(parse_request(job_request(), "sync"), reader, NOW)
    for _ in range(2):
        with pytest.raises(PodReadError):
            barrier.drain_reads(ctx, 0)
    assert reader.calls == Counter({"active_job_pods": 1, "active_launcher_pods": 1})


def test_once_keeps_a_value_and_an_error() -> None:
    once, made = Once(), []
    assert once.get("a", lambda: made.append(1) or [1]) is once.get("a", lambda: made.append(2) or [2])
    assert made == [1]

    def fail() -> None:
        made.append(3)
        raise ValueError("no")

    for _ in range(2):
        with pytest.raises(ValueError):
            once.get("b", fail)
    assert made == [1, 3]


def test_the_jobset_and_the_workload_are_built_once_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """A queue-managed Job admitted with no Workload observed yet: the row checks the spec with the
    JobSet and the Workload (TooManyPodSets), and the Workload child is the same Workload."""
    built: Counter[str] = Counter()
    real_names, real_count = hooks.core.jobset.check_names, hooks.core.queueing.count_of

    def names(*args: Any) -> None:
        built["jobset"] += 1
        real_names(*args)

    def count(node: Any, key: str, *args: Any) -> int:
        built["workload"] += key == "replicas"  # once per pod set: the spec has one replicated job
        return real_count(node, key, *args)

    monkeypatch.setattr(hooks.core.jobset, "check_names", names)
    monkeypatch.setattr(hooks.core.queueing, "count_of", count)
    hooks.core.built._built_json.cache_clear()  # an earlier test's call may have built this JobSet already
    d = run(FakeReader(), labels={"kueue.x-k8s.io/queue-name": "team"}, workloads=[])
    assert [c["kind"] for c in d.response["children"]] == ["Workload"] and d.response["status"]["phase"] == "Queued"
    assert built == Counter({"jobset": 1, "workload": 1})


def test_the_teardown_rows_are_matched_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Row 2a is chosen on one look at Kueue's word (decide looked twice: once to skip the adoption,
    once to dispatch)."""
    looked: list[str] = []
    real = hooks.core.rows.kueue.is_evicted

    def is_evicted(ctx: Context) -> bool:
        looked.append(ctx.job)
        return real(ctx)

    monkeypatch.setattr(hooks.core.rows.kueue, "is_evicted", is_evicted)
    d = run(FakeReader(), labels={"kueue.x-k8s.io/queue-name": "team"},
            workloads=[workload_child("train", state="evicted")], jobsets=[jobset_child("train", 0)],
            status={"phase": "Running", "attempt": 0, "workload": "train-0"})
    assert d.response["status"]["phase"] == "Suspending" and looked == ["train"]



def test_rows_12_and_13_are_rows_of_the_table() -> None:
    """The TTL delete and the quota release are entries of ``decide.ON_THE_PHASE`` (a ``when`` and a
    row), not steps written after the table: ``decide`` calls neither row's work itself."""
    assert [(r.number, r.when, r.then) for r in decide_module.ON_THE_PHASE] == [
        ("12", deadline.ttl_passed, deadline.delete_job), ("13", kueue.quota_releasable, kueue.release_quota)]
    called = {node.func.attr for node in ast.walk(ast.parse(inspect.getsource(decide_module.decide)))
              if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)}
    assert not called & {"delete_job", "release_quota", "ttl_due", "ttl_passed", "quota_releasable"}, called


# ---- the value and its one composition -----------------------------------------------------------------

POD = make_pod("train-0-worker-0-0", job="train")
LAUNCHER = make_pod("train-0-launcher-0-0", launcher="train")


@pytest.mark.parametrize(("drain", "reason", "words"), [
    (Drain(), "NoActivePods", ""),
    (Drain(jobsets=("train-0",), workers=(POD,)), "WorkloadPresent",
     "waiting for JobSet train-0 to be deleted and 1 active pod: train-0-worker-0-0"),
    (Drain(launchers=(LAUNCHER,), batch_jobs=("train-0-worker-0",)), "LauncherActive",
     "waiting for launcher pod train-0-launcher-0-0 to finish and batch Job train-0-worker-0 to finish or be deleted"),
    (Drain(batch_jobs=("a", "b")), "BatchJobsPresent", "waiting for batch Jobs a, b to finish or be deleted"),
    (Drain(jobsets=("x",), error=PodReadError("boom", method="attempt_jobs", code="timeout")), "ReadFailed",
     "waiting for a batch Job read to succeed: the API server did not answer in time"),
])
def test_a_drain_says_why_it_holds(drain: Drain, reason: str, words: str) -> None:
    assert (drain.reason, drain.words(), drain.passed) == (reason, words, reason == "NoActivePods")
    assert drain.message(before="<", after=">") == (f"<{words}>" if words else "")


def test_the_framing_words_are_cut_with_the_message_once() -> None:
    many = Drain(jobsets=("train-0",), workers=tuple(make_pod(f"{'w' * 240}-{i}", job="train") for i in range(5)))
    said = many.message(before="deadline exceeded, tearing down: ", after=" (before creating JobSet x)")
    assert len(said) == MAX_MESSAGE and said.startswith("deadline exceeded, tearing down: waiting for JobSet ")
    assert said.endswith("...")


def work() -> Work:
    return Work(phase="Running", attempt=0, restarts=0, workload="train-0", active_pods=3, conditions=())


def recorded(record: lifecycle.Record) -> Work:
    """A fresh work with ``record`` applied (``lifecycle.apply``)."""
    written = work()
    lifecycle.apply(Context(parse_request(job_request(), "sync"), FakeReader(), NOW),
                    lifecycle.Step(Outcome.HELD, record=record), written)
    return written


def test_record_is_a_value_of_the_condition_the_pods_and_resync() -> None:
    """``barrier.record`` returns what the drain puts into the status (a ``lifecycle.Record``, which
    the row's step carries); ``apply`` writes it."""
    ctx = Context(parse_request(job_request(), "sync"), FakeReader(), NOW)
    said = barrier.record(ctx, (), Drain(workers=(POD,)))
    assert [(c.type, c.status, c.reason) for c in said.conditions] == [("Drained", "False", "PodsActive")]
    assert (said.active_pods, said.resync) == (1, True)
    held = recorded(said)
    assert [(c.type, c.status, c.reason) for c in held.conditions] == [("Drained", "False", "PodsActive")]
    assert (held.active_pods, held.resync) == (1, True)
    failed = recorded(barrier.record(ctx, (), Drain(error=PodReadError("x"), stuck=NOT_KNOWN)))
    assert (failed.conditions[0].status, failed.active_pods) == ("Unknown", 3), "a failed read keeps the count"


def test_a_passing_gate_adds_no_drained_condition_where_there_was_none() -> None:
    ctx = Context(parse_request(job_request(), "sync"), FakeReader(), NOW)
    new = recorded(barrier.record_gate(ctx, (), Drain()))
    assert (new.conditions, new.active_pods, new.resync) == ((), 0, False)
    teardown = recorded(barrier.record(ctx, (), Drain()))
    assert [(c.type, c.status) for c in teardown.conditions] == [("Drained", "True")]
    held = recorded(barrier.record_gate(ctx, (), Drain(workers=(POD,))))
    assert [(c.type, c.status) for c in held.conditions] == [("Drained", "False")]


def assigned_fields(function: Any) -> set[str]:
    """The ``work.<field>`` names ``function``'s own body assigns (``=``, ``+=``, tuple targets
    included; not the functions it calls)."""
    fields: set[str] = set()
    for node in ast.walk(ast.parse(inspect.getsource(function))):
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, ast.AugAssign) else [])
        for target in targets:
            for part in target.elts if isinstance(target, ast.Tuple) else [target]:
                if isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name) and part.value.id == "work":
                    fields.add(part.attr)
    return fields


def guarded_example(work: Work) -> None:
    """What the guard below refuses (a pass that words the status itself)."""
    work.message = "a pass's own words"


def test_nothing_after_the_rows_writes_the_message() -> None:
    """The status message, phase and outcome are the rows' (rows 1-13): the passes that run after
    them, taken from decide's own sequence (``decide.PASSES``: the gang, the agreement, the times, the
    history, the spec pin, the Workload child; rows 12 and 13 run among them as rows, each returning a
    Step), add children, conditions or times, or return a value decide turns into a Step (the gang's
    hold, rows 12 and 13), never write words; the answer's assembly cuts the message once, never
    rewords it."""
    assert [later.name for later in decide_module.PASSES][-1] == "workload"  # the Workload child joins last
    for later in decide_module.PASSES:
        assert not assigned_fields(later.function) & {"message", "phase", "kind"}, later.name
        assert not assigned_fields(later.run) & {"message", "phase", "kind"}, later.name
    assert not assigned_fields(assemble)  # it cuts the message to MAX_MESSAGE once, on a copy: never reworded
    assert "message" in assigned_fields(guarded_example)  # the guard sees a pass's words
    assert {"message", "phase", "kind"} <= assigned_fields(lifecycle.apply)  # the one place a Step writes them


def test_decide_runs_each_pass_only_through_its_sequence() -> None:
    """``decide`` calls no pass itself: each runs once, in ``PASSES``' order, so a pass added to the
    sequence is one the guard above reads."""
    names = vars(decide_module)
    called = []
    for node in ast.walk(ast.parse(inspect.getsource(decide_module.decide))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names:
            called.append(names[node.func.id])
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and isinstance(node.func.value, ast.Name) and node.func.value.id in names):
            called.append(getattr(names[node.func.value.id], node.func.attr))
    passes = [later.function for later in decide_module.PASSES] + [later.run for later in decide_module.PASSES]
    assert not [f for f in called if f in passes]
    assert {deadline.times, history.update, kueue.workload_child} <= set(passes)
