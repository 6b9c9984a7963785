"""The restart budgets (issue 32, per failure class since issue 34): what an ended attempt costs
(``Charge``), and the one rule that says whether it may be paid and what ``status.restarts``,
``status.restartsByCause`` and ``status.restartsByClass`` become (``spend``).

Pure and low in the import order (the vocabulary and the declared spec only), so that every place
that counts restarts asks it: the failure row (``hooks.core.rows.current.failed``: whether a
restart is left), the eviction (``hooks.core.rows.kueue.EVICTION``: an ended attempt that costs
nothing), ``hooks.core.lifecycle.apply`` (the one place a charge enters the status), and the
invariants that check a status' counters against the attempts it had (``hooks.core.evidence``:
``restarts``; ``hooks.core.claims``: ``restartsByCause`` and ``restartsByClass``), through
``most_spent``.

The rule: a failure that restarts the Job is one restart of its ``cause`` in ``restartsByCause``.
When it is ``counted`` (the failure policy's ``RestartJob``, the default: not
``RestartJobIgnoreMaxRestarts``) it spends one of its class's budget (``budget_of``:
``spec.failurePolicy.budgets``; ``user`` defaults to ``spec.maxRestarts``, ``unknown`` shares the
user budget unless it has one of its own (``pool``), ``preempted`` is unlimited, ``node`` and
``infrastructure`` 10) and is refused once that budget is spent (``spent_of``); a paid one adds
one to its class in ``restartsByClass`` and to ``restarts``, which counts every restart that
spent a budget (docs/adr/0107). Any other end (an eviction, a suspend, ...) costs nothing: the next
attempt follows and no counter moves.

What a class has spent is never read from one claim alone (``spent_of``): it is the largest of its
``restartsByClass`` count, the entries of ``status.attempts`` that restarted on that class's
budget (``floor``), and, for ``user``, ``restarts`` less what the other classes claim (a status
written before issue 34 has no ``restartsByClass``: every counted restart was the user's). A status
whose ``restartsByClass`` is written down (or whose history names another class) frees no budget
that ``restarts`` still records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hooks.core.request import Spec, kept
from hooks.core.vocab import BUDGETED, FAILURES, AttemptField, EndCause, FailureClass, Reason

PER_CHARGE = 1
"""How much one paid charge adds to ``restarts`` and its class (when counted) and to
``restartsByCause`` summed."""


@dataclass(frozen=True)
class Charge:
    """What an ended attempt costs: the ``cause`` (for a failure, ``restartsByCause``' key: the
    failure policy's rule name or ``DEFAULT_CAUSE``; for an eviction, Kueue's reason), the kind of
    end ``ended`` (``hooks.core.vocab.EndCause``), whether it is ``counted`` against a budget, and
    the failure class ``klass`` whose budget it spends (``hooks.core.failureclass``). Produced by the
    failure verdict (``failurepolicy.Verdict.charge``) and by an eviction (``rows.kueue``); spent by
    ``spend``."""

    cause: str
    ended: EndCause
    counted: bool
    klass: FailureClass = FailureClass.USER

    @property
    def restart(self) -> bool:
        """Whether the charge is a restart after a failure (``restartsByCause`` counts it)."""
        return self.ended in FAILURES


@dataclass(frozen=True)
class Counters:
    """``status.restarts``, ``status.restartsByCause`` and ``status.restartsByClass`` as a value,
    and ``floor``: per class, how many restarts on its budget the history records (``floor``)."""

    restarts: int = 0
    by_cause: Mapping[str, int] = field(default_factory=dict)
    by_class: Mapping[str, int] = field(default_factory=dict)
    floor: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Spent:
    """What ``spend`` says: whether the charge may be paid (``allowed``: the next attempt may follow)
    and the ``counters`` after it (unchanged when it is refused or costs nothing)."""

    allowed: bool
    counters: Counters


def max_restarts(spec: Spec) -> int:
    """``spec.maxRestarts``: its declared default, 0, when unset (or negative: ``InvalidSpec``'s to report)."""
    return kept(spec, "max_restarts")


def budget_of(spec: Spec, klass: FailureClass) -> int | None:
    """How many restarts class ``klass`` may spend (``None``: unlimited): ``spec.failurePolicy.budgets``'
    key when set and in range, else its default (``hooks.core.request.FailureBudgets``): ``user``
    takes ``max_restarts``, ``unknown`` the user's (and shares it: ``pool``), ``preempted`` is
    unlimited. ``deadline`` has none (0)."""
    if klass not in BUDGETED:
        return 0
    value = kept(spec.budgets, klass.value)
    if value is not None:
        return int(value)
    if klass == FailureClass.UNKNOWN:
        return budget_of(spec, FailureClass.USER)
    return max_restarts(spec) if klass == FailureClass.USER else None


def floor(spec: Spec, attempts: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Per class, the entries of ``attempts`` (``status.attempts``) that restarted on its budget: an
    entry with a ``class`` that has a budget and a restart ``cause`` that is not a rule of
    ``spec`` whose action spends none (``hooks.core.failurepolicy.spends_no_restart``)."""
    from hooks.core.failurepolicy import spends_no_restart  # above this module: it builds the charges

    uncounted = {str(rule.get("name")) for rule in spec.rules if spends_no_restart(rule.get("action"))}
    found: dict[str, int] = {}
    for entry in attempts:
        klass, cause = entry.get(AttemptField.CLASS), entry.get(AttemptField.CAUSE)
        if klass in BUDGETED and isinstance(cause, str) and cause and cause not in uncounted:
            found[str(klass)] = found.get(str(klass), 0) + PER_CHARGE
    return found


def counters(spec: Spec, status: Any) -> Counters:
    """The ``Counters`` of ``status`` (a ``Status`` or the ``Work`` deciding one): its three counters
    and the ``floor`` its history gives under ``spec``."""
    return Counters(status.restarts, dict(status.restarts_by_cause), dict(status.restarts_by_class),
                    floor(spec, status.attempts))


def pool(spec: Spec, klass: FailureClass) -> tuple[FailureClass, ...]:
    """The classes that spend one budget with ``klass``: ``user`` and ``unknown`` share the user
    budget while ``spec.failurePolicy.budgets.unknown`` is unset (an end the evidence does not
    explain is charged as the user's, as every failure was before issue 34); every other class
    spends its own."""
    shared = (FailureClass.USER, FailureClass.UNKNOWN)
    if klass in shared and kept(spec.budgets, "unknown") is None:
        return shared
    return (klass,)


def spent_of(spec: Spec, counters: Counters, klass: FailureClass) -> int:
    """What the budget of class ``klass`` (its ``pool``) has spent, as the module doc says: the
    largest of the pool's claimed counts, its ``floor`` and, for the user budget, ``restarts`` less
    what the classes outside the pool claim."""
    members = pool(spec, klass)
    claimed = sum(counters.by_class.get(member, 0) for member in members)
    if FailureClass.USER in members:
        others = sum(count for name, count in counters.by_class.items() if name not in members)
        claimed = max(claimed, counters.restarts - others)
    return max(claimed, sum(counters.floor.get(member, 0) for member in members))


def spend(spec: Spec, counters: Counters, charge: Charge) -> Spent:
    """Whether ``charge`` may be paid from the budgets ``spec`` gives with ``counters`` spent so far,
    and the counters after it. Reads nothing else.

    A charge that is no restart (``Charge.restart``: an eviction) is allowed and moves nothing. A
    restart is refused when it is ``counted`` and its class's budget is spent (``budget_of``,
    ``spent_of``); otherwise its cause gains ``PER_CHARGE`` in ``by_cause`` and, when counted, its
    class in ``by_class`` and ``restarts``."""
    if not charge.restart:
        return Spent(True, counters)
    limit = budget_of(spec, charge.klass)
    if charge.counted and limit is not None and spent_of(spec, counters, charge.klass) >= limit:
        return Spent(False, counters)
    by_cause = dict(counters.by_cause)
    by_cause[charge.cause] = by_cause.get(charge.cause, 0) + PER_CHARGE
    if not charge.counted:
        return Spent(True, Counters(counters.restarts, by_cause, counters.by_class, counters.floor))
    by_class = dict(counters.by_class)
    by_class[charge.klass.value] = by_class.get(charge.klass.value, 0) + PER_CHARGE
    return Spent(True, Counters(counters.restarts + PER_CHARGE, by_cause, dict(sorted(by_class.items())),
                                counters.floor))


def exhausted_reason(klass: FailureClass) -> Reason:
    """The ``Failed`` condition's reason once class ``klass``'s budget is used up: ``MaxRestartsReached``
    for ``user`` and ``unknown`` (whose budgets default to ``spec.maxRestarts``), else ``BudgetExhausted``."""
    return Reason.MAX_RESTARTS_REACHED if klass in (FailureClass.USER, FailureClass.UNKNOWN) else \
        Reason.BUDGET_EXHAUSTED


def exhausted(spec: Spec, klass: FailureClass) -> str:
    """The words of class ``klass``'s used-up budget for the ``Failed`` condition: ``maxRestarts
    (3) used up`` for ``user`` (and ``unknown`` at its default), else ``the node budget (10) is used up``."""
    if klass not in BUDGETED:
        return f"class {klass.value} has no restart budget"
    members = pool(spec, klass)
    shown = FailureClass.USER if FailureClass.USER in members else klass
    limit = budget_of(spec, shown)
    if shown == FailureClass.USER and kept(spec.budgets, "user") is None:
        return f"maxRestarts ({limit}) used up"
    return f"the {shown.value} budget ({limit}) is used up"


def most_spent(charged: int) -> int:
    """The most that ``charged`` paid charges can have added to ``restarts``, to
    ``restartsByCause`` summed and to ``restartsByClass`` summed: ``PER_CHARGE`` each (``spend``),
    counted or not. The invariants (``hooks.core.evidence.status_mismatch``,
    ``hooks.core.claims.restarts_by_cause`` and ``restarts_by_class``) hold a status whose counters
    are past it."""
    return charged * PER_CHARGE
