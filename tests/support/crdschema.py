"""Offline checks of Kubernetes objects against CustomResourceDefinition schemas.

The published CRDs we deploy against (Metacontroller, JobSet) live in ``../shared/reference/`` next to
the repository, not in it: tests read them at run time and skip, with a reason, when they are absent.

``validate`` runs an ``openAPIV3Schema`` through ``jsonschema`` after translating the Kubernetes
dialect so that the result is close to what the API server does on create:

- ``x-kubernetes-*`` keys are dropped after being interpreted: ``x-kubernetes-int-or-string`` accepts an
  integer or a string; ``x-kubernetes-list-type: map`` rejects two items with the same key fields
  (``x-kubernetes-list-map-keys``, key defaults applied) and ``set`` rejects duplicate items, as the API
  server does; ``x-kubernetes-preserve-unknown-fields`` keeps unknown fields.
- With ``strict=True`` an object that declares ``properties`` and does not preserve unknown fields
  rejects any other field (``additionalProperties: false``), like ``kubectl --validate=strict``.
  Without it unknown fields pass, as they do (pruned) on a real server.
- OpenAPI v3.0 spellings are translated: ``nullable``, boolean ``exclusiveMinimum``/``Maximum``.
- ``format`` (``int32``, ``duration``, ``date-time``...) is ignored; defaults are not applied.
- ``metadata`` of the top-level object is accepted as any object (the API server validates it itself).
- CEL rules (``x-kubernetes-validations``) are **not** evaluated; ``cel_rules`` lists them so that a
  test can check they exist and evaluate a Python equivalent where that is easy.
"""

from __future__ import annotations

import copy
import functools
import os
import pathlib
from collections.abc import Iterator, Mapping
from typing import Any

import jsonschema
import pytest
import yaml

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
"""The repository root (this file is ``<root>/tests/support/crdschema.py``)."""

_LIST_MAP_KEYS = "x-nvcre-list-map-keys"
_LIST_SET = "x-nvcre-list-set"


def shared_dir() -> pathlib.Path:
    """The shared contract directory: ``$NVCRE_SHARED_DIR`` or ``<repo>/../shared``."""
    override = os.environ.get("NVCRE_SHARED_DIR")
    if override:
        return pathlib.Path(override)
    return REPO_ROOT.parent / "shared"


def reference_path(name: str) -> pathlib.Path:
    """The path of ``reference/<name>`` in the shared directory (it may not exist)."""
    return shared_dir() / "reference" / name


def require_reference(name: str) -> pathlib.Path:
    """Return ``reference_path(name)``, or skip the calling test when the file is absent."""
    path = reference_path(name)
    if not path.is_file():
        pytest.skip(f"../shared/reference/{name} not found: schema check skipped")
    return path


def _loader() -> type:
    """The fastest safe YAML loader available (libyaml's when compiled in)."""
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.lru_cache(maxsize=16)
def _load_documents_cached(path: str, mtime_ns: int) -> tuple[Any, ...]:
    """Parse a (multi-document) YAML file once per path and modification time."""
    with open(path, encoding="utf-8") as handle:
        return tuple(doc for doc in yaml.load_all(handle, Loader=_loader()) if doc is not None)


def load_documents(path: str | os.PathLike[str]) -> list[Any]:
    """Every non-empty YAML document in ``path``, parsed (cached: treat the result as read-only)."""
    resolved = pathlib.Path(path).resolve()
    return list(_load_documents_cached(str(resolved), resolved.stat().st_mtime_ns))


def crd_schema(
    crd_doc_or_path: Mapping[str, Any] | str | os.PathLike[str], version: str, name: str | None = None
) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of ``version`` in a CRD.

    ``crd_doc_or_path`` is a parsed CRD or a YAML file holding one or more CRDs; with several, ``name``
    (the CRD's ``metadata.name``, e.g. ``compositecontrollers.metacontroller.k8s.io``) picks one.
    Returns a deep copy, so callers may change it. Raises ``LookupError`` when nothing matches.
    """
    if isinstance(crd_doc_or_path, Mapping):
        docs: list[Any] = [crd_doc_or_path]
    else:
        docs = load_documents(crd_doc_or_path)
    crds = [
        doc
        for doc in docs
        if isinstance(doc, Mapping)
        and doc.get("kind") == "CustomResourceDefinition"
        and (name is None or doc.get("metadata", {}).get("name") == name)
    ]
    if not crds:
        raise LookupError(f"no CustomResourceDefinition named {name!r}")
    if len(crds) > 1:
        names = [doc["metadata"]["name"] for doc in crds]
        raise LookupError(f"several CRDs match, pass name= one of {names}")
    for entry in crds[0]["spec"]["versions"]:
        if entry.get("name") == version:
            return copy.deepcopy(entry["schema"]["openAPIV3Schema"])
    raise LookupError(f"CRD {crds[0]['metadata']['name']} has no version {version!r}")


def _translate(node: Any, *, strict: bool) -> Any:
    """Translate one Kubernetes structural-schema node (recursively) into plain JSON Schema."""
    if isinstance(node, list):
        return [_translate(item, strict=strict) for item in node]
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key.startswith("x-kubernetes-") or key in ("format", "nullable", "default", "description"):
            continue
        if key in ("properties", "patternProperties", "definitions", "$defs"):
            out[key] = {prop: _translate(sub, strict=strict) for prop, sub in value.items()}
        elif key in ("items", "additionalProperties", "not", "anyOf", "allOf", "oneOf"):
            out[key] = _translate(value, strict=strict)
        else:
            out[key] = value
    # OpenAPI v3.0: exclusiveMinimum/Maximum are booleans qualifying minimum/maximum.
    for bound, exclusive in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        # (a False flag is dropped; a True one turns the bound exclusive)
        if isinstance(out.get(exclusive), bool) and out.pop(exclusive) and bound in out:
            out[exclusive] = out.pop(bound)
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    list_type = node.get("x-kubernetes-list-type")
    if list_type == "map":
        key_defaults = {}
        item_props = node.get("items", {}).get("properties", {})
        for key in node.get("x-kubernetes-list-map-keys", []):
            key_defaults[key] = item_props.get(key, {}).get("default")
        out[_LIST_MAP_KEYS] = key_defaults
    elif list_type == "set":
        out[_LIST_SET] = True
    if (
        strict
        and "properties" in node
        and "additionalProperties" not in node
        and not node.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


def _list_map_keys(validator: Any, key_defaults: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """Reject two items of a ``x-kubernetes-list-type: map`` list with the same key fields."""
    if not isinstance(instance, list):
        return
    seen: dict[tuple[Any, ...], int] = {}
    for index, item in enumerate(instance):
        if not isinstance(item, Mapping):
            continue
        key = tuple(item.get(name, default) for name, default in key_defaults.items())
        if key in seen:
            shown = ", ".join(f"{name}={value!r}" for name, value in zip(key_defaults, key, strict=True))
            yield jsonschema.ValidationError(
                f"Duplicate value: item {index} has the same key ({shown}) as item {seen[key]}",
                path=[index],
            )
        else:
            seen[key] = index


def _list_set(validator: Any, enabled: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """Reject duplicate items of a ``x-kubernetes-list-type: set`` list."""
    if not enabled or not isinstance(instance, list):
        return
    for index, item in enumerate(instance):
        if item in instance[:index]:
            yield jsonschema.ValidationError(f"Duplicate value: {item!r}", path=[index])


_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator, {_LIST_MAP_KEYS: _list_map_keys, _LIST_SET: _list_set}
)


def json_schema(schema: Mapping[str, Any], *, strict: bool = True) -> dict[str, Any]:
    """The plain JSON Schema ``validate`` uses for a CRD ``openAPIV3Schema``."""
    translated = _translate(schema, strict=strict)
    props = translated.setdefault("properties", {})
    props["metadata"] = {"type": "object"}
    return translated


def format_path(path: Any) -> str:
    """Render a jsonschema error path as ``spec.replicatedJobs[0].name`` (``<root>`` when empty)."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "<root>"


def validate(obj: Any, schema: Mapping[str, Any], *, strict: bool = True) -> list[str]:
    """Validate ``obj`` against a CRD ``openAPIV3Schema``; return ``"<path>: <message>"`` lines.

    An empty list means valid. See the module docstring for what is and is not emulated.
    """
    validator = _Validator(json_schema(schema, strict=strict))
    errors = sorted(validator.iter_errors(obj), key=lambda err: (list(map(str, err.absolute_path)), err.message))
    return [f"{format_path(err.absolute_path)}: {err.message}" for err in errors]


def cel_rules(schema: Mapping[str, Any], path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every ``x-kubernetes-validations`` rule in ``schema`` as ``(path, rule)``, outermost first.

    Paths use ``[]`` for list items, e.g. ``spec.replicatedJobs[]``; the root is ``""``.
    """
    found: list[tuple[str, dict[str, Any]]] = [
        (path, dict(rule)) for rule in schema.get("x-kubernetes-validations", [])
    ]
    for prop, sub in schema.get("properties", {}).items():
        found.extend(cel_rules(sub, f"{path}.{prop}" if path else prop))
    if isinstance(schema.get("items"), Mapping):
        found.extend(cel_rules(schema["items"], f"{path}[]"))
    if isinstance(schema.get("additionalProperties"), Mapping):
        found.extend(cel_rules(schema["additionalProperties"], f"{path}{{}}"))
    return found
