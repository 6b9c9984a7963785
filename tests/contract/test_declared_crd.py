"""The declared types against the CRD (``manifests/crd-job.yaml``): the code and the schema the API
server enforces cannot drift apart (ADR-105).

``Status`` holds exactly the status fields the CRD declares (less ``observedGeneration``,
Metacontroller's), each of the same JSON type, with the same lower bound (a negative count is a 400
because the CRD refuses it); the phases and condition statuses are the vocabulary's. The spec fields
the hooks declare are in the CRD with the same JSON type (their ranges are ``InvalidSpec``'s, not a
400, so only the types are compared).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import msgspec.inspect as mi
import pytest
import yaml

from hooks.core.request import DrainSpec, FailureBudgets, FailurePolicy, GangSpec, Spec, range_of
from hooks.core.status import Condition, Status
from hooks.core.vocab import BUDGETED, ConditionStatus, FailureClass, Phase

CRD = Path(__file__).resolve().parents[2] / "manifests" / "crd-job.yaml"
NOT_OURS = {"observedGeneration"}
"""Status fields the CRD declares that the hooks neither read nor write (Metacontroller writes it)."""
HAND_BUILT = {"managedBy"}
"""Spec fields the hooks declare that the CRD does not (the API server prunes them): read only so that a
request built by hand carrying one is refused (``InvalidSpec`` ``ManagedElsewhere``)."""


def schema() -> dict[str, Any]:
    crd = yaml.safe_load(CRD.read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v.get("storage")]
    return version["schema"]["openAPIV3Schema"]["properties"]


def _present(info: mi.Type) -> mi.Type:
    """``info`` without ``None`` ("null means absent"; msgspec leaves ``UNSET`` out of the union itself)."""
    if isinstance(info, mi.UnionType):
        kept = [t for t in info.types if not isinstance(t, mi.NoneType)]
        assert len(kept) == 1, f"a declared field has one JSON type: {info}"
        return kept[0]
    return info


def mismatches(info: mi.Type, crd: dict[str, Any], where: str, *, bounds: bool, exact: bool) -> list[str]:
    """Where the declared type ``info`` and the CRD's schema ``crd`` disagree, as ``where: why``.
    ``bounds`` compares lower bounds; ``exact`` requires a struct to declare every CRD property."""
    info = _present(info)
    kind = crd.get("type")
    found: list[str] = []
    if isinstance(info, mi.AnyType):
        return found
    if isinstance(info, mi.IntType):
        if kind != "integer":
            return [f"{where}: declared integer, the CRD says {kind}"]
        if bounds and info.ge != crd.get("minimum"):
            found.append(f"{where}: declared minimum {info.ge}, the CRD says {crd.get('minimum')}")
        return found
    if isinstance(info, mi.StrType | mi.BoolType):
        wanted = "string" if isinstance(info, mi.StrType) else "boolean"
        return [] if kind == wanted else [f"{where}: declared {wanted}, the CRD says {kind}"]
    if isinstance(info, mi.VarTupleType | mi.ListType):
        if kind != "array":
            return [f"{where}: declared array, the CRD says {kind}"]
        return mismatches(info.item_type, crd.get("items") or {}, f"{where}[]", bounds=bounds, exact=exact)
    if kind != "object":
        return [f"{where}: declared object, the CRD says {kind}"]
    if isinstance(info, mi.DictType):
        values = crd.get("additionalProperties")
        if isinstance(values, dict):
            return mismatches(info.value_type, values, f"{where}{{}}", bounds=bounds, exact=exact)
        keys = crd.get("properties")
        if isinstance(keys, dict) and keys:  # a map of named keys (the hooks keep those only): each of the type
            return [why for key, value in keys.items()
                    for why in mismatches(info.value_type, value, f"{where}.{key}", bounds=bounds, exact=exact)]
        if isinstance(_present(info.value_type), mi.AnyType):
            return []
        return [f"{where}: a typed map the CRD leaves open"]
    assert isinstance(info, mi.StructType), info
    properties = crd.get("properties") or {}
    for field in info.fields:
        if field.encode_name in HAND_BUILT and isinstance(field.type, mi.AnyType):
            continue
        if field.encode_name not in properties:
            found.append(f"{where}.{field.encode_name}: declared, not in the CRD")
            continue
        found += mismatches(field.type, properties[field.encode_name], f"{where}.{field.encode_name}",
                            bounds=bounds, exact=exact)
    if exact:
        declared = {field.encode_name for field in info.fields}
        found += [f"{where}.{name}: in the CRD, not declared" for name in sorted(set(properties) - declared - NOT_OURS)]
    return found


def test_the_status_is_the_crds_status() -> None:
    assert mismatches(mi.type_info(Status), schema()["status"], "status", bounds=True, exact=True) == []


def test_the_declared_spec_fields_are_the_crds() -> None:
    assert mismatches(mi.type_info(Spec), schema()["spec"], "spec", bounds=False, exact=False) == []


SPEC_TYPES = {"spec": Spec, "spec.drain": DrainSpec, "spec.gang": GangSpec, "spec.failurePolicy": FailurePolicy,
              "spec.failurePolicy.budgets": FailureBudgets}
NOT_REFUSED_ABOVE = {"spec.maxRestarts"}
"""Fields whose CRD ``maximum`` the hooks do not refuse (``maxRestarts`` over 9999: no attempt past 9999
is ever built, ``AttemptLimitReached``), so their declared range has no upper bound."""
DEFAULTED_BY_THE_HOOKS = {"spec.gang.whenUnavailable"}
"""Fields the hooks read with a default the CRD cannot write: its CEL rule refuses ``whenUnavailable``
beside ``policy: None``, so the API server leaves it unset and ``Wait`` is the hooks' reading."""


def _crd_at(path: str) -> dict[str, Any]:
    node: dict[str, Any] = {"properties": schema()}
    for part in path.split("."):
        node = node["properties"][part]
    return node


@pytest.mark.parametrize("where", sorted(SPEC_TYPES))
def test_each_spec_fields_range_and_default_are_the_crds(where: str) -> None:
    """The one declaration of a spec field's range (``Range``) and default (``hooks.core.request``)
    says what the CRD says: ``minimum``/``maximum``, ``enum`` and ``default``."""
    declared, crd = SPEC_TYPES[where], _crd_at(where)["properties"]
    found = []
    for field in msgspec.structs.fields(declared):
        schema_of = crd.get(field.encode_name)
        if schema_of is None or schema_of.get("type") not in ("integer", "string", "boolean"):
            continue
        at, bounds, default = f"{where}.{field.encode_name}", range_of(declared, field.name), field.default
        if "enum" in schema_of and tuple(schema_of["enum"]) != bounds.values:
            found.append(f"{at}: declared values {bounds.values}, the CRD says {schema_of['enum']}")
        if schema_of.get("minimum") != bounds.low:
            found.append(f"{at}: declared low {bounds.low}, the CRD says {schema_of.get('minimum')}")
        high = None if at in NOT_REFUSED_ABOVE else schema_of.get("maximum")
        if high != bounds.high:
            found.append(f"{at}: declared high {bounds.high}, the CRD says {high}")
        if schema_of.get("default") != (None if at in DEFAULTED_BY_THE_HOOKS else default):
            found.append(f"{at}: declared default {default!r}, the CRD says {schema_of.get('default')!r}")
    assert found == []


def test_the_vocabulary_is_the_crds() -> None:
    status = schema()["status"]["properties"]
    assert set(status["phase"]["enum"]) == set(Phase)
    condition = status["conditions"]["items"]
    assert set(condition["properties"]["status"]["enum"]) == set(ConditionStatus)
    assert "type" in condition["required"]  # the one field a Condition cannot do without


@pytest.mark.parametrize(("info", "crd", "expected"), [
    (mi.type_info(Condition), {"type": "object", "properties": {"type": {"type": "string"}}},
     ["c.status: declared, not in the CRD", "c.reason: declared, not in the CRD",
      "c.message: declared, not in the CRD", "c.lastTransitionTime: declared, not in the CRD"]),
    (mi.type_info(Condition), {"type": "object", "properties": {
        name: {"type": "string"} for name in ("type", "status", "reason", "message", "lastTransitionTime", "extra")}},
     ["c.extra: in the CRD, not declared"]),
    (mi.type_info(msgspec.structs.fields(Status)[1].type), {"type": "integer"},
     ["c: declared minimum 0, the CRD says None"]),
    (mi.type_info(msgspec.structs.fields(Status)[0].type), {"type": "integer"},
     ["c: declared string, the CRD says integer"]),
])
def test_the_comparison_finds_a_drift(info: mi.Type, crd: dict[str, Any], expected: list[str]) -> None:
    assert mismatches(info, crd, "c", bounds=True, exact=True) == expected


def test_the_failure_classes_are_the_crds_keys_and_values() -> None:
    """Issue 34: ``status.restartsByClass`` and ``spec.failurePolicy.budgets`` name the classes with a
    budget, ``status.attempts[].class`` and a rule's ``class`` every class: the vocabulary's."""
    spec, status = schema()["spec"]["properties"], schema()["status"]["properties"]
    budgeted = [klass.value for klass in BUDGETED]
    assert list(status["restartsByClass"]["properties"]) == budgeted
    assert list(spec["failurePolicy"]["properties"]["budgets"]["properties"]) == budgeted
    classes = [klass.value for klass in FailureClass]
    assert status["attempts"]["items"]["properties"]["class"]["enum"] == classes
    assert spec["failurePolicy"]["properties"]["rules"]["items"]["properties"]["class"]["enum"] == classes
