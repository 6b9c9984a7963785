"""kubectl's JSONPath templates (``-o jsonpath=...``), as ``k8s.io/client-go/util/jsonpath`` reads and runs them.

A port of client-go v0.37's parser and evaluator, so a template written for ``kubectl get -o
jsonpath`` prints the same here: text and ``{...}`` actions; fields (``.a.b``, ``['a.b']``, escaped
dots ``a\\.b``), ``*``, ``[n]``, slices ``[a:b:c]`` (negative indexes count from the end), unions
``[a,b]``, recursive descent ``..``, filters ``[?(@.x=="v")]`` (``== != < > <= >=``, or existence)
with Go's comparison rules (a string against a number is an error), ``{range ...}...{end}``, quoted
text (``{"\\n"}``). Results of one action are joined by a space; a map or list prints as compact
JSON (Go's ``json.Marshal``: sorted keys, ``<``, ``>``, ``&`` escaped), ``null`` for null. Missing
keys print nothing, as ``kubectl get`` allows them by default (``--allow-missing-template-keys``).

``parse`` raises ``JSONPathError`` with the parser's words; ``execute`` raises it with the
evaluator's (``array index out of bounds: index 3, length 1``). The command turns them into kubectl's
lines (``commands``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


class JSONPathError(Exception):
    """A template that does not parse, or fails on the object (client-go's error text)."""


class Literal(str):
    """Text the template itself holds (outside an action, or quoted in one): printed as written,
    never escaped, unlike the strings read from the object."""

    __slots__ = ()


# ---- the nodes ------------------------------------------------------------------------------------------


@dataclass(eq=False)
class ListNode:
    nodes: list[Any] = field(default_factory=list)


@dataclass(eq=False)
class TextNode:
    text: str


@dataclass(eq=False)
class FieldNode:
    value: str


@dataclass
class Param:
    """One of a slice's three numbers: ``known`` (written, or derived), its ``value``, ``derived``."""

    known: bool = False
    value: int = 0
    derived: bool = False


@dataclass(eq=False)
class ArrayNode:
    params: tuple[Param, Param, Param]


@dataclass(eq=False)
class FilterNode:
    left: ListNode
    right: ListNode
    operator: str


@dataclass(eq=False)
class IntNode:
    value: int


@dataclass(eq=False)
class FloatNode:
    value: float


@dataclass(eq=False)
class BoolNode:
    value: bool


@dataclass(eq=False)
class WildcardNode:
    pass


@dataclass(eq=False)
class RecursiveNode:
    pass


@dataclass(eq=False)
class UnionNode:
    nodes: list[ListNode]


@dataclass(eq=False)
class IdentifierNode:
    name: str


# ---- the parser (client-go util/jsonpath/parser.go) -------------------------------------------------------

_EOF = ""
_DICT_KEY = re.compile(r"^'([^']*)'$")
_SLICE = re.compile(r"^(-?[\d]*)(:-?[\d]*)?(:-?[\d]*)?$")
_FILTER = re.compile(r"^([^!<>=]+)([!<>=]+)(.+?)$", re.S)


def _terminator(char: str) -> bool:
    return char in (_EOF, " ", "\t", "\r", "\n", ".", ",", "[", "]", "$", "@", "{", "}")


def _alphanumeric(char: str) -> bool:
    return char == "_" or char.isalpha() or char.isdigit()


def _unquote(text: str) -> str:
    """A quoted string of the template, its escapes read as Go's ``strconv.UnquoteChar`` reads them."""
    if len(text) < 2 or text[0] != text[-1] or text[0] not in "\"'":
        raise JSONPathError("invalid syntax")
    body, quote = text[1:-1], text[0]
    if "\\" not in body and quote not in body:
        return body
    out: list[str] = []
    index = 0
    simple = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}
    while index < len(body):
        char = body[index]
        if char == quote and quote == "'":
            raise JSONPathError("invalid syntax")
        if char != "\\":
            out.append(char)
            index += 1
            continue
        if index + 1 >= len(body):
            raise JSONPathError("invalid syntax")
        code = body[index + 1]
        if code in simple:
            out.append(simple[code])
            index += 2
        elif code == quote:
            out.append(code)
            index += 2
        elif code in "xuU01234567":
            size = {"x": 2, "u": 4, "U": 8}.get(code, 3)
            digits = body[index + (2 if code in "xuU" else 1): index + (2 if code in "xuU" else 1) + size]
            try:
                value = int(digits, 8 if code not in "xuU" else 16)
            except ValueError:
                raise JSONPathError("invalid syntax") from None
            if len(digits) != size:
                raise JSONPathError("invalid syntax")
            out.append(chr(value))
            index += (2 if code in "xuU" else 1) + size
        else:
            raise JSONPathError("invalid syntax")
    return "".join(out)


class _Parser:
    """client-go's ``Parser``: ``root`` holds one ``ListNode`` per action and a ``TextNode`` per text."""

    def __init__(self, text: str) -> None:
        self.input, self.root = text, ListNode()
        self.pos = self.start = self.width = 0

    def parse(self) -> ListNode:
        self._text(self.root)
        return self.root

    def _consume(self) -> str:
        value = self.input[self.start:self.pos]
        self.start = self.pos
        return value

    def _next(self) -> str:
        if self.pos >= len(self.input):
            self.width = 0
            return _EOF
        self.width = 1
        self.pos += 1
        return self.input[self.pos - 1]

    def _peek(self) -> str:
        char = self._next()
        self._backup()
        return char

    def _backup(self) -> None:
        self.pos -= self.width

    def _text(self, cur: ListNode) -> None:
        while True:
            if self.input.startswith("{", self.pos):
                if self.pos > self.start:
                    cur.nodes.append(TextNode(self._consume()))
                self._left_delim(cur)
                return
            if self._next() == _EOF:
                break
        if self.pos > self.start:
            cur.nodes.append(TextNode(self._consume()))

    def _left_delim(self, cur: ListNode) -> None:
        self.pos += 1
        self._consume()
        node = ListNode()
        cur.nodes.append(node)
        self._inside(node)

    def _inside(self, cur: ListNode) -> None:
        while True:
            rest = self.input[self.pos:]
            if rest.startswith("}"):
                self.pos += 1
                self._consume()
                self._text(self.root)
                return
            if rest.startswith("[?("):
                self._filter(cur)
                continue
            if rest.startswith(".."):
                self._recursive(cur)
                continue
            char = self._next()
            if char == _EOF or char in "\r\n":
                raise JSONPathError("unclosed action")
            if char == " " or char in "@$":
                self._consume()
            elif char == "[":
                self._array(cur)
            elif char in "\"'":
                self._quote(cur, char)
            elif char == ".":
                self._field(cur)
            elif char in "+-" or char.isdigit():
                self._backup()
                self._number(cur)
            elif _alphanumeric(char):
                self._backup()
                self._identifier(cur)
            else:
                raise JSONPathError(f"unrecognized character in action: U+{ord(char):04X} {char!r}")

    def _identifier(self, cur: ListNode) -> None:
        while not _terminator(self._next()):
            pass
        self._backup()
        value = self._consume()
        cur.nodes.append(BoolNode(value == "true") if value in ("true", "false") else IdentifierNode(value))

    def _recursive(self, cur: ListNode) -> None:
        if cur.nodes and isinstance(cur.nodes[-1], RecursiveNode):
            raise JSONPathError("invalid multiple recursive descent")
        self.pos += 2
        self._consume()
        cur.nodes.append(RecursiveNode())
        if _alphanumeric(self._peek()):
            self._field(cur)

    def _number(self, cur: ListNode) -> None:
        if self._peek() in ("+", "-"):
            self._next()
        while True:
            char = self._next()
            if (char != "." and not char.isdigit()) or char == _EOF:
                self._backup()
                break
        value = self._consume()
        try:
            cur.nodes.append(IntNode(int(value)))
            return
        except ValueError:
            pass
        try:
            cur.nodes.append(FloatNode(float(value)))
        except ValueError:
            raise JSONPathError(f"cannot parse number {value}") from None

    def _array(self, cur: ListNode) -> None:
        while True:
            char = self._next()
            if char in (_EOF, "\n"):
                raise JSONPathError("unterminated array")
            if char == "]":
                break
        text = self._consume()[1:-1]
        if text == "*":
            text = ":"
        parts = text.split(",")
        if len(parts) > 1:
            cur.nodes.append(UnionNode([_action(f"[{part.strip(' ')}]") for part in parts]))
            return
        key = _DICT_KEY.match(text)
        if key:
            cur.nodes.extend(_action(f".{key.group(1)}").nodes)
            return
        found = _SLICE.match(text)
        if found is None:
            raise JSONPathError(f"invalid array index {text}")
        values = list(found.groups(""))
        params = (Param(), Param(), Param())
        for i in range(3):
            if values[i] != "":
                if i > 0:
                    values[i] = values[i][1:]
                if i > 0 and values[i] == "":
                    params[i].known = False
                else:
                    params[i].known = True
                    try:
                        params[i].value = int(values[i])
                    except ValueError:
                        raise JSONPathError(f"array index {values[i]} is not a number") from None
            elif i == 1:
                params[i].known, params[i].value, params[i].derived = True, params[0].value + 1, True
        cur.nodes.append(ArrayNode(params))

    def _filter(self, cur: ListNode) -> None:
        self.pos += 3
        self._consume()
        begin = end = False
        pair = ""
        while True:
            char = self._next()
            if char in (_EOF, "\n"):
                raise JSONPathError("unterminated filter")
            if char in "\"'":
                if not begin:
                    begin, pair = True, char
                    continue
                if self.input[self.pos - 2] != "\\" and char == pair:
                    end = True
            elif char == ")" and begin == end:
                break
        if self._next() != "]":
            raise JSONPathError("unclosed array expect ]")
        text = self._consume()[:-2]
        found = _FILTER.match(text)
        if found is None:
            cur.nodes.append(FilterNode(_action(text), ListNode(), "exists"))
        else:
            cur.nodes.append(FilterNode(_action(found.group(1)), _action(found.group(3)), found.group(2)))

    def _quote(self, cur: ListNode, end: str) -> None:
        while True:
            char = self._next()
            if char in (_EOF, "\n"):
                raise JSONPathError("unterminated quoted string")
            if char == end and self.input[self.pos - 2] != "\\":
                break
        value = self._consume()
        try:
            cur.nodes.append(TextNode(_unquote(value)))
        except JSONPathError as exc:
            raise JSONPathError(f"unquote string {value} error {exc}") from None

    def _field(self, cur: ListNode) -> None:
        self._consume()
        while True:
            char = self._next()
            if char == "\\":
                self._next()
            elif _terminator(char):
                self._backup()
                break
        value = self._consume()
        cur.nodes.append(WildcardNode() if value == "*" else FieldNode(value.replace("\\", "")))


def _action(text: str) -> ListNode:
    """``text`` parsed as the inside of one action (client-go's ``parseAction``)."""
    root = _Parser("{" + text + "}").parse()
    node = root.nodes[0]
    assert isinstance(node, ListNode)
    return node


def parse(template: str) -> ListNode:
    """The template's nodes; raises ``JSONPathError`` with the parser's words for one that does not parse."""
    return _Parser(template).parse()


# ---- the evaluator (client-go util/jsonpath/jsonpath.go) -------------------------------------------------


def go_type(value: Any) -> str:
    """The Go type an unstructured value has, for the evaluator's error words."""
    if isinstance(value, Mapping):
        return "map[string]interface {}"
    if isinstance(value, list):
        return "[]interface {}"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    return "<invalid reflect.Value>"


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    raise JSONPathError("invalid type for comparison")


def _equal(left: Any, right: Any) -> bool:
    if _kind(left) != _kind(right):
        raise JSONPathError("incompatible types for comparison")
    return bool(left == right)


def _less(left: Any, right: Any) -> bool:
    kind = _kind(left)
    if kind != _kind(right):
        raise JSONPathError("incompatible types for comparison")
    if kind == "bool":
        raise JSONPathError("invalid type for comparison")
    return bool(left < right)


def _compare(operator: str, left: Any, right: Any) -> bool:
    if operator == "==":
        return _equal(left, right)
    if operator == "!=":
        return not _equal(left, right)
    if operator == "<":
        return _less(left, right)
    if operator == "<=":
        return _less(left, right) or _equal(left, right)
    if operator == ">":
        return not (_less(left, right) or _equal(left, right))
    if operator == ">=":
        return not _less(left, right)
    raise JSONPathError(f"unrecognized filter operator {operator}")


def _children(value: Any) -> list[Any]:
    if isinstance(value, Mapping):
        return list(value.values())
    if isinstance(value, list):
        return list(value)
    if isinstance(value, str):
        return list(value.encode())  # Go indexes a string by its bytes (uint8): no string inside a string
    return []


class _Run:
    """One execution: client-go's range counters (``begin``, ``inside``, ``end``) and the last ``{end}``."""

    def __init__(self) -> None:
        self.begin = self.inside = self.end = 0
        self.last_end: Any = None

    def find(self, data: Any, nodes: list[Any]) -> list[list[Any]]:
        full: list[list[Any]] = []
        index = 0
        while index < len(nodes):
            node = nodes[index]
            results = self.walk([data], node)
            if 0 < self.end <= self.inside:
                self.end -= 1
                self.last_end = node
                break
            if self.begin > 0:
                self.begin -= 1
                self.inside += 1
                if results:
                    for value in results:
                        full.extend(self.find(value, nodes[index + 1:]))
                else:
                    self.find(None, nodes[index + 1:])
                self.inside -= 1
                for later in range(index + 1, len(nodes)):
                    if nodes[later] is self.last_end:
                        index = later
                        break
                index += 1
                continue
            full.append(results)
            index += 1
        return full

    def walk(self, values: list[Any], node: Any) -> list[Any]:
        if isinstance(node, ListNode):
            for child in node.nodes:
                values = self.walk(values, child)
            return values
        if isinstance(node, TextNode):
            return [Literal(node.text)]
        if isinstance(node, FieldNode):
            return [value[node.value] for value in values
                    if isinstance(value, Mapping) and node.value in value]
        if isinstance(node, ArrayNode):
            return self._array(values, node)
        if isinstance(node, FilterNode):
            return self._filter(values, node)
        if isinstance(node, IntNode | FloatNode | BoolNode):
            return [node.value for _ in values]
        if isinstance(node, WildcardNode):
            return [child for value in values if value is not None for child in _children(value)]
        if isinstance(node, RecursiveNode):
            return self._recursive(values)
        if isinstance(node, UnionNode):
            return [found for part in node.nodes for found in self.walk(values, part)]
        if isinstance(node, IdentifierNode):
            if node.name == "range":
                self.begin += 1
                return values
            if node.name == "end":
                if self.inside > 0:
                    self.end += 1
                    return []
                raise JSONPathError("not in range, nothing to end")
            raise JSONPathError(f"unrecognized identifier {node.name}")
        raise JSONPathError(f"unexpected Node {node}")

    @staticmethod
    def _array(values: list[Any], node: ArrayNode) -> list[Any]:
        result: list[Any] = []
        for value in values:
            if value is None:
                continue
            if not isinstance(value, list):
                raise JSONPathError(f"{go_type(value)} is not array or slice")
            length = len(value)
            first, last, step = (Param(p.known, p.value, p.derived) for p in node.params)
            if not first.known:
                first.value = 0
            if first.value < 0:
                first.value += length
            if not last.known:
                last.value = length
            if last.value < 0 or (last.value == 0 and last.derived):
                last.value += length
            if last.value == first.value:
                return result
            if first.value >= length or first.value < 0:
                raise JSONPathError(f"array index out of bounds: index {first.value}, length {length}")
            if last.value > length or last.value < 0:
                raise JSONPathError(f"array index out of bounds: index {last.value - 1}, length {length}")
            if first.value > last.value:
                raise JSONPathError(f"starting index {first.value} is greater than ending index {last.value}")
            if step.known and step.value <= 0:
                raise JSONPathError("step must be > 0")
            result.extend(value[first.value:last.value:step.value if step.known else 1])
        return result

    def _filter(self, values: list[Any], node: FilterNode) -> list[Any]:
        result: list[Any] = []
        for value in values:
            if not isinstance(value, list):
                raise JSONPathError(f"{go_type(value)} is not array or slice and cannot be filtered")
            for item in value:
                lefts = self.walk([item], node.left)
                if node.operator == "exists":
                    if lefts:
                        result.append(item)
                    continue
                if not lefts:
                    continue
                if len(lefts) > 1:
                    raise JSONPathError("can only compare one element at a time")
                rights = self.walk([item], node.right)
                if not rights:
                    continue
                if len(rights) > 1:
                    raise JSONPathError("can only compare one element at a time")
                if _compare(node.operator, lefts[0], rights[0]):
                    result.append(item)
        return result

    def _recursive(self, values: list[Any]) -> list[Any]:
        result: list[Any] = []
        for value in values:
            if value is None:
                continue
            children = _children(value)
            if children:
                result.append(value)
                result.extend(self._recursive(children))
        return result


def go_json(value: Any) -> str:
    """``value`` as Go's ``json.Marshal`` writes it: compact, keys sorted, ``<``, ``>``, ``&``, U+2028
    and U+2029 escaped (and, unlike Go, every other non-ASCII character too: a terminal-safe form)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def go_text(value: Any) -> str:
    """A scalar result as Go's ``fmt.Fprint`` prints it: strings as they are, ``true``/``false``,
    integers, floats in their shortest form (``1`` for ``1.0``, ``1e+21``), ``null`` for null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        text = repr(value)
        mantissa, _, exponent = text.partition("e")
        return f"{mantissa}e{'+' if not exponent.startswith('-') else '-'}{exponent.lstrip('+-').zfill(2)}" \
            if exponent else text
    return str(value)


def execute(template: ListNode, data: Any, escape: Callable[[str], str] = str) -> str:
    """The text the template prints for ``data`` (a decoded JSON value): each action's results
    joined by a space, maps and lists as ``go_json``, the rest as ``go_text``; every string read
    from ``data`` goes through ``escape`` (the template's own text does not: its ``{"\n"}`` is a
    line break). Raises ``JSONPathError``."""
    out: list[str] = []
    for results in _Run().find(data, template.nodes):
        out.append(" ".join(r if isinstance(r, Literal) else escape(go_json(r) if isinstance(r, Mapping | list)
                                                                    else go_text(r)) for r in results))
    return "".join(out)
