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

from hooks.core.request import Spec
from hooks.core.status import Condition, Status
from hooks.core.vocab import ConditionStatus, Phase

CRD = Path(__file__).resolve().parents[2] / "manifests" / "crd-job.yaml"
NOT_OURS = {"observedGeneration"}
"""Status fields the CRD declares that the hooks neither read nor write (Metacontroller writes it)."""


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
        if isinstance(_present(info.value_type), mi.AnyType):
            return []
        return [f"{where}: a typed map the CRD leaves open"]
    assert isinstance(info, mi.StructType), info
    properties = crd.get("properties") or {}
    for field in info.fields:
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
