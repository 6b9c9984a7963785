"""Label and field selectors for pod lists, parsed and matched the way kube-apiserver does.

Label selectors follow ``k8s.io/apimachinery/pkg/labels``: terms joined by ``,`` (AND), each one of
``key=v``, ``key==v``, ``key!=v``, ``key in (a,b)``, ``key notin (a,b)``, ``key``, ``!key``,
``key>n``, ``key<n``. Field selectors follow ``k8s.io/apimachinery/pkg/fields`` with the field
labels the API server supports for pods. Anything malformed raises ``SelectorError`` whose message is
what the fake answers in a 400 ``Status``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Pod = Mapping[str, Any]

_NAME_RE = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_DNS1123_SUBDOMAIN_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_SPECIAL = frozenset("=!(),<>")
_WHITESPACE = frozenset(" \t\r\n")


class SelectorError(ValueError):
    """A selector string the API server would refuse with 400 BadRequest; the message says why."""


@dataclass(frozen=True)
class Requirement:
    """One label term: ``key``, an operator and its values (empty for ``exists``/``!``)."""

    key: str
    operator: str  # one of: in, notin, exists, !, gt, lt (= and == are "in", != is "notin")
    values: frozenset[str]

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfies this term: a missing key satisfies only ``notin`` and ``!``."""
        present = self.key in labels
        if self.operator == "in":
            return present and labels[self.key] in self.values
        if self.operator == "notin":
            return not present or labels[self.key] not in self.values
        if self.operator == "exists":
            return present
        if self.operator == "!":
            return not present
        if not present:
            return False
        try:
            have = int(labels[self.key])
        except ValueError:
            return False
        (want,) = (int(value) for value in self.values)
        return have > want if self.operator == "gt" else have < want


@dataclass(frozen=True)
class LabelSelector:
    """A parsed ``labelSelector``: every requirement must hold. Empty selects everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether a pod with ``labels`` (``None`` = no labels) is selected."""
        labels = labels or {}
        return all(requirement.matches(labels) for requirement in self.requirements)

    def equality_terms(self) -> list[tuple[str, frozenset[str]]]:
        """The ``key in values`` terms (``=``, ``==``, ``in``): what an index by label value can serve."""
        return [(r.key, r.values) for r in self.requirements if r.operator == "in"]


def _tokens(text: str) -> list[str]:
    """Split a label selector into tokens: identifiers and the operators ``= == != ! ( ) , > <``."""
    tokens: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char in _WHITESPACE:
            i += 1
        elif char in _SPECIAL:
            two = text[i : i + 2]
            if two in ("==", "!="):
                tokens.append(two)
                i += 2
            else:
                tokens.append(char)
                i += 1
        else:
            start = i
            while i < len(text) and text[i] not in _SPECIAL and text[i] not in _WHITESPACE:
                i += 1
            tokens.append(text[start:i])
    return tokens


def _is_identifier(token: str | None) -> bool:
    """Whether ``token`` is a word rather than an operator or the end of the string."""
    return token is not None and token[0] not in _SPECIAL


def _check_key(key: str) -> None:
    """Raise ``SelectorError`` unless ``key`` is a qualified name (``[prefix/]name``)."""
    prefix, _, name = key.rpartition("/")
    if "/" in key and (not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN_RE.fullmatch(prefix)):
        raise SelectorError(f"unable to parse requirement: invalid label key {key!r}: bad prefix")
    if not name or len(name) > 63 or not _NAME_RE.fullmatch(name):
        raise SelectorError(f"unable to parse requirement: invalid label key {key!r}: bad name")


def _check_value(value: str) -> None:
    """Raise ``SelectorError`` unless ``value`` is a valid label value (empty is valid)."""
    if value and (len(value) > 63 or not _NAME_RE.fullmatch(value)):
        raise SelectorError(f"unable to parse requirement: invalid label value: {value!r}")


class _LabelParser:
    """Recursive-descent parser over ``_tokens`` output; one instance per selector string."""

    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.pos = 0

    def peek(self) -> str | None:
        """The next token without consuming it, ``None`` at the end."""
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str | None:
        """Consume and return the next token, ``None`` at the end."""
        token = self.peek()
        self.pos += 1
        return token

    def fail(self, found: str | None, expected: str) -> SelectorError:
        """The error for an unexpected token."""
        shown = "" if found is None else found
        return SelectorError(f"unable to parse requirement: found '{shown}', expected: {expected}")

    def parse(self) -> LabelSelector:
        """Parse the whole string into a ``LabelSelector`` or raise ``SelectorError``."""
        requirements: list[Requirement] = []
        if self.peek() is None:
            return LabelSelector()
        while True:
            requirements.append(self.requirement())
            token = self.take()
            if token is None:
                return LabelSelector(tuple(requirements))
            if token != ",":
                raise self.fail(token, "',' or 'end of string'")
            following = self.peek()
            if not (_is_identifier(following) or following == "!"):
                raise self.fail(following, "identifier after ','")

    def requirement(self) -> Requirement:
        """Parse one term."""
        token = self.take()
        if token == "!":
            key = self.take()
            if not _is_identifier(key):
                raise self.fail(key, "identifier after '!'")
            assert key is not None
            _check_key(key)
            return Requirement(key, "!", frozenset())
        if not _is_identifier(token):
            raise self.fail(token, "! or identifier")
        assert token is not None
        key = token
        _check_key(key)
        if self.peek() in (None, ","):
            return Requirement(key, "exists", frozenset())
        operator = self.take()
        if operator in ("in", "notin"):
            values = self.value_set()
            return Requirement(key, operator, values)
        if operator in ("=", "==", "!=", ">", "<"):
            value = self.exact_value()
            if operator in (">", "<"):
                try:
                    int(value)
                except ValueError:
                    raise SelectorError(
                        f"unable to parse requirement: for 'gt', 'lt' operators, the value must be an "
                        f"integer: {value!r}"
                    ) from None
                return Requirement(key, "gt" if operator == ">" else "lt", frozenset({value}))
            _check_value(value)
            return Requirement(key, "notin" if operator == "!=" else "in", frozenset({value}))
        raise self.fail(operator, "'=', '!=', '==', 'in', 'notin', '>' or '<'")

    def exact_value(self) -> str:
        """The single value after ``=``/``==``/``!=``/``>``/``<``; ``""`` when the term ends there."""
        token = self.peek()
        if token in (None, ","):
            return ""
        if not _is_identifier(token):
            raise self.fail(token, "identifier")
        self.pos += 1
        assert token is not None
        return token

    def value_set(self) -> frozenset[str]:
        """The ``(a,b)`` after ``in``/``notin``; ``()`` is the set holding ``""`` as in the real parser."""
        token = self.take()
        if token != "(":
            raise self.fail(token, "'('")
        values: set[str] = set()
        expect_value = True
        while True:
            token = self.take()
            if token is None:
                raise self.fail(token, "')'")
            if token == ")":
                if expect_value:
                    values.add("")
                break
            if token == ",":
                if expect_value:
                    values.add("")
                expect_value = True
            elif _is_identifier(token) and expect_value:
                _check_value(token)
                values.add(token)
                expect_value = False
            else:
                raise self.fail(token, "',' or ')'")
        return frozenset(values)


def parse_label_selector(text: str) -> LabelSelector:
    """Parse a ``labelSelector`` query value; ``""`` selects everything. Raises ``SelectorError``."""
    return _LabelParser(text).parse()


def _pod_field(path: tuple[str, str], default: str = "") -> Callable[[Pod], str]:
    """A getter for ``section.key`` of a pod as the string the API server compares against."""
    section, key = path

    def get(pod: Pod) -> str:
        value = (pod.get(section) or {}).get(key, default)
        if isinstance(value, bool):
            return "true" if value else "false"
        return "" if value is None else str(value)

    return get


POD_FIELDS: Mapping[str, Callable[[Pod], str]] = {
    "metadata.name": _pod_field(("metadata", "name")),
    "metadata.namespace": _pod_field(("metadata", "namespace")),
    "spec.nodeName": _pod_field(("spec", "nodeName")),
    "spec.restartPolicy": _pod_field(("spec", "restartPolicy")),
    "spec.schedulerName": _pod_field(("spec", "schedulerName")),
    "spec.serviceAccountName": _pod_field(("spec", "serviceAccountName")),
    "spec.hostNetwork": _pod_field(("spec", "hostNetwork"), "false"),
    "status.phase": _pod_field(("status", "phase")),
    "status.podIP": _pod_field(("status", "podIP")),
    "status.nominatedNodeName": _pod_field(("status", "nominatedNodeName")),
}
"""The pod field labels kube-apiserver accepts in a ``fieldSelector``, and how each is read."""


def pod_field_values(pod: Pod) -> dict[str, str]:
    """Every selectable field of ``pod`` as the string a ``fieldSelector`` compares against."""
    return {name: get(pod) for name, get in POD_FIELDS.items()}


@dataclass(frozen=True)
class FieldTerm:
    """One field term: ``field``, ``=`` (also for ``==``) or ``!=``, and the value."""

    field: str
    operator: str
    value: str

    def matches(self, values: Mapping[str, str]) -> bool:
        """Whether the pod whose ``pod_field_values`` are ``values`` satisfies this term."""
        equal = values[self.field] == self.value
        return equal if self.operator == "=" else not equal


@dataclass(frozen=True)
class FieldSelector:
    """A parsed ``fieldSelector``: every term must hold. Empty selects everything."""

    terms: tuple[FieldTerm, ...] = ()

    def matches(self, values: Mapping[str, str]) -> bool:
        """Whether the pod whose ``pod_field_values`` are ``values`` is selected."""
        return all(term.matches(values) for term in self.terms)

    def equals(self, field: str) -> str | None:
        """The value of an ``field=value`` term, or ``None`` when there is none (for index lookups)."""
        for term in self.terms:
            if term.field == field and term.operator == "=":
                return term.value
        return None


def _split_unescaped(text: str, separator: str) -> list[str]:
    """Split on ``separator`` where it is not escaped by a backslash; escapes are kept as they are."""
    parts: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            current.append(text[i : i + 2])
            i += 2
            continue
        if char == separator:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    parts.append("".join(current))
    return parts


def _unescape(value: str) -> str:
    """Undo ``\\\\``, ``\\,`` and ``\\=``; any other escape or a bare ``,``/``=`` is an error."""
    out: list[str] = []
    i = 0
    while i < len(value):
        char = value[i]
        if char == "\\":
            if i + 1 >= len(value) or value[i + 1] not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence in {value!r}")
            out.append(value[i + 1])
            i += 2
            continue
        if char in ",=":
            raise SelectorError(f"invalid field selector: unescaped {char!r} in value {value!r}")
        out.append(char)
        i += 1
    return "".join(out)


def _split_term(term: str) -> tuple[str, str, str]:
    """``(field, operator, raw value)`` at the first unescaped ``!=``, ``==`` or ``=``."""
    i = 0
    while i < len(term):
        if term[i] == "\\":
            i += 2
            continue
        for operator in ("!=", "==", "="):
            if term.startswith(operator, i):
                return term[:i], operator, term[i + len(operator) :]
        i += 1
    raise SelectorError(f"invalid selector: '{term}'; can't understand '{term}'")


def parse_field_selector(text: str) -> FieldSelector:
    """Parse a pod ``fieldSelector``; ``""`` selects everything. Raises ``SelectorError``.

    A field the API server does not index for pods answers ``field label not supported: <field>``.
    """
    terms: list[FieldTerm] = []
    for part in _split_unescaped(text, ","):
        if not part:
            continue
        field, operator, raw = _split_term(part)
        field = field.strip()
        if field not in POD_FIELDS:
            raise SelectorError(f"field label not supported: {field}")
        terms.append(FieldTerm(field, "!=" if operator == "!=" else "=", _unescape(raw)))
    return FieldSelector(tuple(terms))
