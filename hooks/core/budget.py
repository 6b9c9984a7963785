"""The restart budget (issue 32): what an ended attempt costs (``Charge``), and the one rule that
says whether it may be paid and what ``status.restarts`` and ``status.restartsByCause`` become
(``spend``).

Pure and low in the import order (the vocabulary and the declared spec only), so that every place that counts restarts
asks it: the failure row (``hooks.core.rows.current.failed``: whether a restart is left), the
eviction (``hooks.core.rows.kueue.EVICTION``: an ended attempt that costs nothing),
``hooks.core.lifecycle.apply`` (the one place a charge enters the status), and the two invariants
that check a status' counters against the attempts it had (``hooks.core.evidence``: ``restarts``;
``hooks.core.claims``: ``restartsByCause``), through ``most_spent``.

The rule: a failure that restarts the Job is one restart of its ``cause`` in ``restartsByCause``;
when it is ``counted`` (the failure policy's ``RestartJob``, the default: not
``hooks.core.failurepolicy.spends_no_restart``) it also spends one of ``spec.maxRestarts`` and is
refused once ``restarts`` reached it. Any other end (an eviction, a suspend, ...) costs nothing: the
next attempt follows and neither counter moves.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from hooks.core.request import Spec, kept
from hooks.core.vocab import FAILURES, EndCause

PER_CHARGE = 1
"""How much one paid charge adds to ``restarts`` (when counted) and to ``restartsByCause`` summed."""


@dataclass(frozen=True)
class Charge:
    """What an ended attempt costs: the ``cause`` (for a failure, ``restartsByCause``' key: the
    failure policy's rule name or ``DEFAULT_CAUSE``; for an eviction, Kueue's reason), its class
    ``ended`` (why the attempt ended: ``hooks.core.vocab.EndCause``) and whether it is ``counted``
    against ``maxRestarts``. Produced by the failure verdict (``failurepolicy.Verdict.charge``) and by
    an eviction (``rows.kueue``); spent by ``spend``."""

    cause: str
    ended: EndCause
    counted: bool

    @property
    def restart(self) -> bool:
        """Whether the charge is a restart after a failure (``restartsByCause`` counts it)."""
        return self.ended in FAILURES


@dataclass(frozen=True)
class Counters:
    """``status.restarts`` and ``status.restartsByCause``, as a value."""

    restarts: int = 0
    by_cause: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Spent:
    """What ``spend`` says: whether the charge may be paid (``allowed``: the next attempt may follow)
    and the ``counters`` after it (unchanged when it is refused or costs nothing)."""

    allowed: bool
    counters: Counters


def max_restarts(spec: Spec) -> int:
    """``spec.maxRestarts``: its declared default, 0, when unset (or negative: ``InvalidSpec``'s to report)."""
    return kept(spec, "max_restarts")


def spend(spec: Spec, counters: Counters, charge: Charge) -> Spent:
    """Whether ``charge`` may be paid from the budget ``spec`` gives (``max_restarts``) with
    ``counters`` spent so far, and the counters after it. Reads nothing else.

    A charge that is no restart (``Charge.restart``: an eviction) is allowed and moves nothing. A
    restart is refused when it is ``counted`` and ``counters.restarts`` reached ``maxRestarts``;
    otherwise its cause gains ``PER_CHARGE`` in ``by_cause``, and ``restarts`` too when counted."""
    if not charge.restart:
        return Spent(True, counters)
    if charge.counted and counters.restarts >= max_restarts(spec):
        return Spent(False, counters)
    by_cause = dict(counters.by_cause)
    by_cause[charge.cause] = by_cause.get(charge.cause, 0) + PER_CHARGE
    return Spent(True, Counters(counters.restarts + (PER_CHARGE if charge.counted else 0), by_cause))


def most_spent(charged: int) -> int:
    """The most that ``charged`` paid charges can have added to ``restarts``, and to
    ``restartsByCause`` summed: ``PER_CHARGE`` each (``spend``), counted or not. The invariants
    (``hooks.core.evidence.status_mismatch``, ``hooks.core.claims.restarts_by_cause``) hold a status
    whose counters are past it."""
    return charged * PER_CHARGE
