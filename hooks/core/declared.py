"""How the declared types are read: msgspec Structs, strict, "null means absent", and a 4xx that names
the field (ADR-105).

``Declared`` is the base of every declared type (``hooks.core.request``, ``hooks.core.status``): a
field the API server may send as ``null`` is typed ``T | None`` with a default, and reads as that
default. ``decode`` converts a decoded JSON value into a declared type, strictly (a boolean is not an
integer, a number is not an integer, nothing is coerced), and turns msgspec's error into the
``InvalidRequest`` the hooks have always answered: ``parent.status.attempt: expected an integer, got
string``, with the map key msgspec leaves out (``[...]``) found again in the document. A type checks
the meaning of its fields in ``__post_init__`` by raising ``ValueError("<field>: <why>")``; the
message is reported at the field's path the same way. Pure: msgspec only.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import msgspec

T = TypeVar("T")

MAPPING = (dict, Mapping)
"""``isinstance(value, MAPPING)`` is ``isinstance(value, Mapping)`` (a ``dict`` is a ``Mapping``), but answers
a ``dict``, what decoded JSON holds, by a type check instead of the ABC's registry check (about 0.2 µs
each, 18-22 of them on every ``/sync``: issue 32 item 4). For the checks on the hot path."""


class InvalidRequest(Exception):
    """The request cannot be decided on: ``status`` is the HTTP code (400 or 422), ``message`` says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Declared(msgspec.Struct, kw_only=True):
    """The base of the declared types: after decoding (or construction), a field that holds ``None``
    but whose default is not ``None`` takes its default ("null means absent")."""

    def __post_init__(self) -> None:
        cls = type(self)
        nullable = _NULLABLE.get(cls) or _nullable(cls)
        if nullable[0] is not None and None in nullable[0](self):  # one C-level look at every such field
            for name, default in nullable[1]:
                if getattr(self, name) is None:
                    msgspec.structs.force_setattr(self, name, default() if callable(default) else default)


_NULLABLE: dict[type, tuple[Callable[[Any], Any] | None, tuple[tuple[str, Any], ...]]] = {}


def _nullable(cls: type) -> tuple[Callable[[Any], Any] | None, tuple[tuple[str, Any], ...]]:
    """The fields of ``cls`` with a default that is not ``None`` (a factory for ``[]``/``{}``), and a
    getter of them all as one tuple (``None`` when there are none), cached."""
    fields = tuple((f.name, f.default_factory if f.default is msgspec.NODEFAULT else f.default)
                   for f in msgspec.structs.fields(cls)
                   if not (f.default is None or (f.default is msgspec.NODEFAULT
                                                 and f.default_factory is msgspec.NODEFAULT)))
    names = [name for name, _ in fields]
    getter = None if not names else operator.attrgetter(*names) if len(names) > 1 else (
        lambda obj, name=names[0]: (getattr(obj, name),))
    _NULLABLE[cls] = (getter, fields)
    return _NULLABLE[cls]


def prepare(*types: type) -> None:
    """Builds msgspec's conversion info for ``types`` (and every type they nest) now, in the thread
    importing the module that declares them; returns nothing.

    msgspec (0.22.0) builds a type's info on the first conversion into it, and two threads making
    that first conversion at once can crash the process: a gunicorn worker serves calls on 4
    threads, and under load one died of a SIGSEGV in ``msgspec.convert`` (a NULL field type in
    ``convert_dict_to_struct``; 18 of 30 fresh processes of 8 threads crashed so, none once the info
    was built first: tests/core/test_declared_threads.py). Every module that declares a type
    ``decode`` (or ``msgspec.convert``) converts into calls this on it, so the info exists before
    any thread converts.
    """
    for declared in types:
        msgspec.json.Decoder(declared)  # builds the type's info, as a first conversion would


def decode(value: object, into: type[T], path: str = "") -> T:
    """``value`` (decoded JSON) as the declared type ``into``; ``path`` names ``value`` in the request
    (``""`` for the request itself). Raises ``InvalidRequest`` (400) naming the field that is wrong."""
    try:
        return msgspec.convert(value, into, strict=True)
    except msgspec.ValidationError as exc:
        raise InvalidRequest(400, invalid(str(exc), value, path)) from None


_EXPECTED = {"int": "an integer", "str": "a string", "bool": "a boolean", "float": "a number",
             "object": "an object", "array": "an array"}
_GOT = {"int": "integer", "str": "string", "bool": "boolean", "float": "number", "null": "null",
        "object": "object", "array": "array"}
_TOKEN = re.compile(r"\.([^.\[]+)|\[(\d+)\]|\[(\.\.\.)\]")


def invalid(error: str, document: object, prefix: str) -> str:
    """The 400 message for msgspec's ``error`` (``Expected `int`, got `str` - at `$.a.b```) about
    ``document``, whose own path in the request is ``prefix``."""
    message, _, where = error.rpartition(" - at `")
    if not message:
        message, where = error, "$`"
    steps = _steps(where.rstrip("`")[1:])
    typed = re.fullmatch(r"Expected `([^`]+)`, got `([^`]+)`", message)
    ranged = re.fullmatch(r"Expected `([^`]+)` (>=|<=|>|<) (-?\d+)", message)
    if typed:
        got = typed.group(2)
        keys = _resolve(document, steps, lambda leaf: json_type(leaf) == _GOT.get(got, got))
        return f"{_render(prefix, keys)}: expected {_expected(typed.group(1))}, got {_GOT.get(got, got)}"
    if ranged:
        op, bound = ranged.group(2), int(ranged.group(3))
        keys = _resolve(document, steps, lambda leaf: isinstance(leaf, int) and not _within(leaf, op, bound))
        leaf = _at(document, keys)
        return f"{_render(prefix, keys)}: expected {_expected(ranged.group(1))} {op} {bound}, got {leaf}"
    missing = re.fullmatch(r"Object missing required field `([^`]+)`", message)
    keys = _resolve(document, steps, lambda leaf: True)
    if missing:
        return f"{_render(prefix, [*keys, missing.group(1)])}: missing"
    where_text = _render(prefix, keys)
    return f"{where_text}.{message}" if where_text else message


def json_type(value: object) -> str:
    """The JSON name of ``value``'s type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


def _expected(names: str) -> str:
    wanted = [name for name in names.split(" | ") if name != "null"] or ["null"]
    return " or ".join(_EXPECTED.get(name, name) for name in wanted)


def _within(value: int, op: str, bound: int) -> bool:
    return {">=": value >= bound, "<=": value <= bound, ">": value > bound, "<": value < bound}[op]


def _steps(where: str) -> list[str | int | None]:
    """msgspec's path after ``$`` as steps: a field name, an index, or ``None`` for an elided map key."""
    steps: list[str | int | None] = []
    for name, index, _elided in _TOKEN.findall(where):
        steps.append(name if name else int(index) if index else None)
    return steps


def _resolve(document: object, steps: list[str | int | None], wrong: Callable[[object], bool]) -> list[str | int]:
    """``steps`` with each elided map key (``None``) replaced by the first key of that map under which
    the rest of the path leads to a value ``wrong`` accepts. A field name stays as written (msgspec
    reports the JSON name)."""
    keys: list[str | int] = []
    node: object = document
    for position, step in enumerate(steps):
        if step is None and isinstance(node, Mapping):
            rest = steps[position + 1:]
            chosen = next((key for key in node if _leads(node[key], rest, wrong)), next(iter(node), ""))
            keys.append(_Key(chosen))
            node = node.get(chosen)
            continue
        keys.append(step if step is not None else "...")
        node = _child(node, step)
    return keys


def _leads(node: object, steps: list[str | int | None], wrong: Callable[[object], bool]) -> bool:
    for position, step in enumerate(steps):
        if step is None:
            rest = steps[position + 1:]
            return isinstance(node, Mapping) and any(_leads(value, rest, wrong) for value in node.values())
        node = _child(node, step)
    return wrong(node)


def _child(node: object, step: str | int | None) -> object:
    if isinstance(step, int):
        return node[step] if isinstance(node, list | tuple) and step < len(node) else None
    return node.get(step) if isinstance(node, Mapping) else None


def _at(document: object, keys: list[str | int]) -> object:
    node = document
    for key in keys:
        node = _child(node, key)
    return node


def _render(prefix: str, keys: list[str | int]) -> str:
    """``prefix`` followed by ``keys`` as the hooks write a path: ``.field``, ``[0]``, ``["key"]``."""
    text = prefix
    for key in keys:
        if isinstance(key, int):
            text += f"[{key}]"
        elif isinstance(key, _Key):
            text += f'["{key[:80]}"]'
        else:
            text += f".{key}" if text else key
    return text


class _Key(str):
    """A map key found again where msgspec wrote ``[...]``: shown as ``["key"]``, not as a field."""

    __slots__ = ()
