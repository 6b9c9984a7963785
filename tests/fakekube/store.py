"""The fake API server's pod storage: a thread-safe map with indexes and paged, snapshotted lists.

Pods are kept as immutable entries (compact JSON plus the labels and selectable fields) that are
replaced, never changed in place, so a list snapshot can hold references to them while tests keep
mutating the store; keeping bytes rather than dicts keeps 64,000 pods small and lists cheap.
Every mutation bumps one global resourceVersion, as etcd's revision does.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import json
import threading
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tests.fakekube.selectors import FieldSelector, LabelSelector, pod_field_values

Pod = dict[str, Any]
Key = tuple[str, str]


def dumps(obj: Any) -> bytes:
    """Compact JSON bytes, as the API server writes them."""
    return json.dumps(obj, separators=(",", ":")).encode()


@dataclass(frozen=True)
class Entry:
    """One stored pod: its compact JSON (list-item form), labels and selectable field values."""

    key: Key
    raw: bytes
    labels: Mapping[str, str]
    fields: Mapping[str, str]
    uid: str
    created: str

    def pod(self) -> Pod:
        """A fresh copy of the pod as a dict."""
        return json.loads(self.raw)


@dataclass
class Snapshot:
    """The full, sorted result of one paged list, kept so later pages come from the same state."""

    rv: int
    signature: tuple[str, str, str]
    entries: list[Entry]
    expired: bool = False


@dataclass(frozen=True)
class Page:
    """What one list call answers: items, the list's resourceVersion and the next token, if any."""

    entries: list[Entry]
    rv: int
    continue_token: str | None
    remaining: int | None


@dataclass(frozen=True)
class Change:
    """One mutation, as the watch sees it: the entry before (``old``) and after (``new``, ``None``
    for a deletion), and the object a watch event carries (for a deletion, the last state under
    the deletion's resourceVersion, as etcd's watch reports it)."""

    rv: int
    old: Entry | None
    new: Entry | None
    raw: bytes


class ContinueError(Exception):
    """A ``continue`` value that cannot be served. ``code`` is 400 (malformed) or 410 (expired)."""

    def __init__(self, code: int, message: str, inconsistent_token: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.inconsistent_token = inconsistent_token


@dataclass
class _Indexes:
    """Keys by namespace, by (label key, value) and by node, for cheap candidate selection."""

    by_namespace: dict[str, set[Key]] = field(default_factory=dict)
    by_label: dict[tuple[str, str], set[Key]] = field(default_factory=dict)
    by_node: dict[str, set[Key]] = field(default_factory=dict)

    def _buckets(self, entry: Entry) -> list[tuple[dict[Any, set[Key]], Any]]:
        """Every (index, bucket name) an entry belongs to."""
        buckets: list[tuple[dict[Any, set[Key]], Any]] = [(self.by_namespace, entry.key[0])]
        buckets += [(self.by_label, item) for item in entry.labels.items()]
        buckets.append((self.by_node, entry.fields["spec.nodeName"]))
        return buckets

    def add(self, entry: Entry) -> None:
        """Index ``entry``."""
        for index, bucket in self._buckets(entry):
            index.setdefault(bucket, set()).add(entry.key)

    def remove(self, entry: Entry) -> None:
        """Remove ``entry``'s index entries; empty buckets are dropped."""
        for index, bucket in self._buckets(entry):
            keys = index.get(bucket)
            if keys is not None:
                keys.discard(entry.key)
                if not keys:
                    del index[bucket]


def at_version(entry: Entry, rv: int) -> bytes:
    """``entry``'s pod under resourceVersion ``rv`` (what a deletion's watch event carries)."""
    pod = json.loads(entry.raw)
    pod.setdefault("metadata", {})["resourceVersion"] = str(rv)
    return dumps(pod)


def _now() -> str:
    """The current UTC time in the API server's RFC 3339 seconds form."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _encode_token(snapshot_id: int, rv: int, offset: int, start: Key) -> str:
    """An opaque continue token (base64 JSON, like the real one)."""
    payload = {"v": "fakekube/v1", "id": snapshot_id, "rv": rv, "off": offset, "start": list(start)}
    return base64.urlsafe_b64encode(dumps(payload)).decode()


def _decode_token(token: str) -> dict[str, Any]:
    """The payload of a continue token, or ``ContinueError(400)``."""
    try:
        payload = json.loads(base64.urlsafe_b64decode(token.encode()))
        if not isinstance(payload, dict) or payload.get("v") != "fakekube/v1":
            raise ValueError("unknown token version")
        int(payload["id"]), int(payload["rv"]), int(payload["off"])
        start = payload["start"]
        if not (isinstance(start, list) and len(start) == 2):
            raise ValueError("bad start key")
    except (ValueError, KeyError, TypeError, binascii.Error) as error:
        raise ContinueError(400, f"continue key is not valid: {error}") from None
    return payload


class PodStore:
    """All pods of the fake cluster, their indexes, the resourceVersion and live continue snapshots."""

    def __init__(self, max_snapshots: int = 1000, max_history: int = 100_000) -> None:
        self._lock = threading.RLock()
        self._history: deque[Change] = deque()
        self._max_history = max_history
        self._history_from = 100
        self._listeners: list[Callable[[Change], None]] = []
        self._cache_rv = 100
        self._entries: dict[Key, Entry] = {}
        self._indexes = _Indexes()
        self._sorted_keys: list[Key] | None = None
        self._rv = 100
        self._snapshots: OrderedDict[int, Snapshot] = OrderedDict()
        self._next_snapshot = 1
        self._max_snapshots = max_snapshots

    @property
    def resource_version(self) -> int:
        """The current global resourceVersion."""
        with self._lock:
            return self._rv

    @property
    def watch_cache_version(self) -> int:
        """The resourceVersion the pods' watch cache has reached: the last pod change, or the global
        resourceVersion at the last consistent list (which asks etcd for progress, as the real
        cacher does). Bookmarks carry it."""
        with self._lock:
            return self._cache_rv

    def bump_resource_version(self) -> int:
        """Another kind of object changed (a Lease, say): the global resourceVersion moves, and the
        pods' watch cache does not hear of it until a pod changes or a consistent list asks."""
        with self._lock:
            self._rv += 1
            return self._rv

    # -- mutations ---------------------------------------------------------------------------------

    def _store(self, pod: Mapping[str, Any]) -> Entry:
        """Store ``pod`` as it is now under a new resourceVersion; the lock must be held.

        Fills ``namespace`` ("default"), ``uid`` and ``creationTimestamp`` when absent (kept from the
        stored pod on a replace) and drops ``kind``/``apiVersion`` (list items carry neither). Only
        the serialized form is kept, so the caller may go on changing ``pod``.
        """
        new = {name: value for name, value in pod.items() if name not in ("kind", "apiVersion")}
        metadata = dict(new.get("metadata") or {})
        new["metadata"] = metadata
        if not metadata.get("name"):
            raise ValueError("a pod needs metadata.name")
        metadata.setdefault("namespace", "default")
        key = (str(metadata["namespace"]), str(metadata["name"]))
        old = self._entries.get(key)
        metadata.setdefault("uid", old.uid if old else str(uuid.uuid4()))
        metadata.setdefault("creationTimestamp", old.created if old else _now())
        self._rv += 1
        metadata["resourceVersion"] = str(self._rv)
        entry = Entry(
            key,
            dumps(new),
            dict(metadata.get("labels") or {}),
            pod_field_values(new),
            str(metadata["uid"]),
            str(metadata["creationTimestamp"]),
        )
        if old is not None:
            self._indexes.remove(old)
        else:
            self._sorted_keys = None
        self._entries[key] = entry
        self._indexes.add(entry)
        self._changed(Change(self._rv, old, entry, entry.raw))
        return entry

    def put(self, pods: Iterable[Mapping[str, Any]]) -> list[Entry]:
        """Create or replace each pod (one resourceVersion each); returns the stored entries."""
        with self._lock:
            return [self._store(pod) for pod in pods]

    def replace_all(self, pods: Iterable[Mapping[str, Any]]) -> None:
        """Make ``pods`` the only pods (one resourceVersion for the removal, one per pod)."""
        with self._lock:
            removed = list(self._entries.values())
            self._entries.clear()
            self._indexes = _Indexes()
            self._sorted_keys = None
            self._rv += 1
            for entry in removed:
                self._changed(Change(self._rv, entry, None, at_version(entry, self._rv)))
            for pod in pods:
                self._store(pod)

    def delete(self, namespace: str, name: str) -> Pod | None:
        """Remove a pod; returns it, or ``None`` (and no resourceVersion bump) when it did not exist."""
        with self._lock:
            entry = self._entries.pop((namespace, name), None)
            if entry is None:
                return None
            self._indexes.remove(entry)
            self._sorted_keys = None
            self._rv += 1
            self._changed(Change(self._rv, entry, None, at_version(entry, self._rv)))
            return entry.pod()

    def update(self, namespace: str, name: str, mutate: Callable[[Pod], Pod | None]) -> Pod:
        """Apply ``mutate`` to a copy of a stored pod and store the result atomically.

        ``mutate`` changes the dict in place (returning ``None``) or returns a new one. Raises
        ``KeyError`` when the pod does not exist. Returns the stored copy.
        """
        with self._lock:
            entry = self._entries.get((namespace, name))
            if entry is None:
                raise KeyError(f"{namespace}/{name}")
            pod = json.loads(entry.raw)
            result = mutate(pod)
            return json.loads(self._store(pod if result is None else result).raw)

    # -- the watch's view -----------------------------------------------------------------------

    def _changed(self, change: Change) -> None:
        """Keeps ``change`` in the history and tells every listener; the lock must be held."""
        self._cache_rv = change.rv
        self._history.append(change)
        while len(self._history) > self._max_history:
            self._history_from = self._history.popleft().rv
        for listener in list(self._listeners):
            listener(change)

    def _progress(self) -> None:
        """A consistent list: the watch cache catches up with the global resourceVersion (etcd
        progress notify) and tells the listeners with a change that has neither entry. Lock held."""
        if self._rv > self._cache_rv:
            self._cache_rv = self._rv
            for listener in list(self._listeners):
                listener(Change(self._rv, None, None, b""))

    def subscribe(self, since: int | None, listener: Callable[[Change], None]) -> tuple[list[Change], list[Entry], int]:
        """Registers ``listener`` for every later change, atomically with what came before it.

        ``since`` is a watch's resourceVersion: returns the changes after it (and no entries), or,
        for ``None`` (a watch from "now" or "any"), every current entry (and no changes). Also returns
        the watch cache's resourceVersion. Raises ``ContinueError(410)`` when the history no longer reaches
        back to ``since`` (it was compacted), as etcd answers a watch from a compacted revision.
        """
        with self._lock:
            if since is None:
                backlog: list[Change] = []
                entries = [self._entries[key] for key in self._all_keys()]
            else:
                if since < self._history_from:
                    raise ContinueError(410, f"too old resource version: {since} ({self._history_from})")
                backlog = [change for change in self._history if change.rv > since]
                entries = []
            self._listeners.append(listener)
            return backlog, entries, max(self._cache_rv, since or 0)

    def unsubscribe(self, listener: Callable[[Change], None]) -> None:
        """Stops telling ``listener``."""
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def history_since(self, since: int) -> list[Change]:
        """The changes kept after ``since`` (for replaying them to a watch: duplicates)."""
        with self._lock:
            return [change for change in self._history if change.rv > since]

    def compact(self) -> int:
        """Forgets the history, as an etcd compaction does: a watch from any earlier resourceVersion
        then gets 410 Expired. Returns the resourceVersion the history now starts at."""
        with self._lock:
            self._history.clear()
            self._history_from = self._rv
            return self._rv

    # -- reads -------------------------------------------------------------------------------------

    def get(self, namespace: str, name: str) -> Entry | None:
        """The stored entry for a pod, or ``None``."""
        with self._lock:
            return self._entries.get((namespace, name))

    def all_pods(self) -> list[Pod]:
        """Copies of every stored pod, ordered by namespace and name."""
        with self._lock:
            entries = [self._entries[key] for key in self._all_keys()]
        return [entry.pod() for entry in entries]

    def _all_keys(self) -> list[Key]:
        """Every key in order; rebuilt only after a create or delete. The lock must be held."""
        if self._sorted_keys is None:
            self._sorted_keys = sorted(self._entries)
        return self._sorted_keys

    def _select(self, namespace: str | None, labels: LabelSelector, fields: FieldSelector) -> list[Entry]:
        """Every selected entry in key order, from the smallest index bucket that bounds the answer.

        The lock must be held.
        """
        candidates: list[set[Key]] = []
        if namespace is not None:
            candidates.append(self._indexes.by_namespace.get(namespace, set()))
        for key, values in labels.equality_terms():
            bucket: set[Key] = set()
            for value in values:
                bucket |= self._indexes.by_label.get((key, value), set())
            candidates.append(bucket)
        node = fields.equals("spec.nodeName")
        if node is not None:
            candidates.append(self._indexes.by_node.get(node, set()))
        keys = sorted(min(candidates, key=len)) if candidates else self._all_keys()
        selected: list[Entry] = []
        for key in keys:
            entry = self._entries[key]
            if namespace is not None and key[0] != namespace:
                continue
            if labels.requirements and not labels.matches(entry.labels):
                continue
            if fields.terms and not fields.matches(entry.fields):
                continue
            selected.append(entry)
        return selected

    def list(
        self,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        signature: tuple[str, str, str],
        limit: int = 0,
        continue_token: str = "",
    ) -> Page:
        """One page of a list, as the API server serves it from etcd.

        Without ``continue_token`` the list reads the current state; with ``limit`` > 0 and more
        items than that, the full result is kept as a snapshot and the page carries a token for the
        rest. With a token, the page comes from that snapshot (its resourceVersion included).
        ``signature`` (namespace, labelSelector, fieldSelector as sent) must match the token's.
        Raises ``ContinueError``: 400 for a malformed or mismatched token, 410 for an expired one.
        """
        with self._lock:
            if continue_token:
                snapshot_id, snapshot, offset = self._resume(
                    continue_token, namespace, labels, fields, signature
                )
            else:
                self._progress()
                snapshot = Snapshot(self._rv, signature, self._select(namespace, labels, fields))
                snapshot_id, offset = 0, 0
            entries = snapshot.entries
            if limit <= 0 or offset + limit >= len(entries):
                return Page(entries[offset:], snapshot.rv, None, None)
            if snapshot_id == 0:
                snapshot_id = self._remember(snapshot)
            end = offset + limit
            token = _encode_token(snapshot_id, snapshot.rv, end, entries[end - 1].key)
            unfiltered = not labels.requirements and not fields.terms
            return Page(entries[offset:end], snapshot.rv, token, len(entries) - end if unfiltered else None)

    def _remember(self, snapshot: Snapshot) -> int:
        """Keep ``snapshot`` for later pages; the oldest are forgotten (as compaction does)."""
        snapshot_id = self._next_snapshot
        self._next_snapshot += 1
        self._snapshots[snapshot_id] = snapshot
        while len(self._snapshots) > self._max_snapshots:
            self._snapshots.popitem(last=False)
        return snapshot_id

    def _resume(
        self,
        token: str,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        signature: tuple[str, str, str],
    ) -> tuple[int, Snapshot, int]:
        """The snapshot and offset a token continues from, or ``ContinueError``. Lock held."""
        payload = _decode_token(token)
        snapshot = self._snapshots.get(int(payload["id"]))
        if snapshot is not None and snapshot.signature != signature:
            raise ContinueError(
                400,
                "continue key is not valid: the token belongs to a list with a different namespace "
                "or selectors (fakekube is stricter than the real server here)",
            )
        if snapshot is None or snapshot.expired:
            raise ContinueError(
                410,
                "The provided continue parameter is too old to display a consistent list result. You can "
                "start a new list without the continue parameter, or use the continue token in this "
                "response to retrieve the remainder of the results. Continuing with the provided token "
                "results in an inconsistent list - objects that were created, modified, or deleted "
                "between the time the first chunk was returned and now may show up in the list.",
                self._inconsistent_token(tuple(payload["start"]), namespace, labels, fields, signature),
            )
        return int(payload["id"]), snapshot, int(payload["off"])

    def _inconsistent_token(
        self,
        start: tuple[Any, ...],
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        signature: tuple[str, str, str],
    ) -> str:
        """A token that continues after ``start`` in the current state (the 410's ``continue``)."""
        snapshot = Snapshot(self._rv, signature, self._select(namespace, labels, fields))
        offset = bisect.bisect_right(
            [entry.key for entry in snapshot.entries], (str(start[0]), str(start[1]))
        )
        return _encode_token(self._remember(snapshot), snapshot.rv, offset, (str(start[0]), str(start[1])))

    def expire_snapshots(self) -> int:
        """Make every continue token handed out so far answer 410 Expired; returns how many lists."""
        with self._lock:
            live = [snapshot for snapshot in self._snapshots.values() if not snapshot.expired]
            for snapshot in live:
                snapshot.expired = True
            return len(live)
