"""What one hook call computes at most once: a live read, a built object, or the error either raised.

Pure: a dictionary. ``hooks.core.work.Context`` holds one ``Once`` per call, so two rows that need
the same thing in one call (the adoption's drain reads and the barrier's, the JobSet a row answers
and the one its Workload is built from) share it: the call reads and builds each thing once, and
both see the same value. An error is remembered too and raised again, so a read that failed once
in a call fails for every row of that call (it never turns into "none" on a second try).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar, overload

T = TypeVar("T")


class Once:
    """Values by key, each computed by the first ``get`` that asks for it. What ``get`` returns is
    shared by every later caller: read it, never modify it."""

    def __init__(self) -> None:
        self._done: dict[Hashable, tuple[Any, Exception | None]] = {}

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The value of ``key``: ``compute()`` the first time (its result, or the exception it
        raised, is kept), the kept result (or the kept exception, raised again) afterwards."""
        if key not in self._done:
            try:
                self._done[key] = (compute(), None)
            except Exception as error:
                self._done[key] = (None, error)
        value, error = self._done[key]
        if error is not None:
            raise error
        return value

    def peek(self, key: Hashable) -> Any | None:
        """The value ``key`` was computed to this call, or ``None`` when it was not asked for or its
        computation raised. Never computes anything: for a reader of what a row already read."""
        value, error = self._done.get(key, (None, None))
        return None if error is not None else value


class per_call(Generic[T]):  # a decorator, named as functools.cached_property is
    """``functools.cached_property`` without its lock, for an object of one call (``Context``): the
    first read of the attribute computes it and keeps it in the instance's ``__dict__``, where every
    later read finds it without coming here. Python 3.11's ``cached_property`` takes an ``RLock`` on
    every first read (about twice the time, issue 32 item 4), a guard no object read by one thread
    needs; were two threads to race, each would compute the same value (the functions are pure)."""

    def __init__(self, compute: Callable[[Any], T]) -> None:
        self.compute = compute
        self.name = compute.__name__
        self.__doc__ = compute.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> per_call[T]: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> T: ...

    def __get__(self, instance: object | None, owner: type | None = None) -> T | per_call[T]:
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.compute(instance)
        return value
