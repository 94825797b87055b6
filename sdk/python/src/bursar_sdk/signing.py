"""The owner's signatures with eth-account (the ``signing`` extra: ``pip install
"sdk/python[signing]"`` from the repository), for an owner whose key a program holds — or to
see exactly what a wallet will be asked to sign."""

from __future__ import annotations

import re
from typing import Any

from .models.relayer import DecisionRequest, DecisionToSign, OpenRequest, Prepared


def _typed(json: dict[str, Any]) -> dict[str, Any]:
    """The relayer's ``eth_signTypedData_v4`` JSON with its integers as ints."""
    types = json["types"]

    def convert(kind: str, value: Any) -> Any:
        if re.fullmatch(r"u?int\d*", kind):
            return int(value)
        if kind in types and isinstance(value, dict):
            return {f["name"]: convert(f["type"], value.get(f["name"])) for f in types[kind]}
        return value

    return {
        "types": types,
        "primaryType": json["primaryType"],
        "domain": convert("EIP712Domain", json["domain"]),
        "message": convert(json["primaryType"], json["message"]),
    }


def _sign(account: Any, typed: Any) -> str:
    if not isinstance(typed, dict):
        typed = typed.model_dump(by_alias=True)
    signed = account.sign_typed_data(full_message=_typed(typed))
    return "0x" + bytes(signed.signature).hex().removeprefix("0x")


def sign_prepared(account: Any, prepared: Prepared) -> OpenRequest:
    """``OpenSession``, and the deposit's permit when the token has one, signed by ``account``
    (an eth-account ``LocalAccount``)."""
    typed = prepared.typed_data
    permit = _sign(account, typed.permit) if typed.permit else "0x"
    return OpenRequest(prepared_id=prepared.prepared_id, owner_signature=_sign(account, typed.open_session),
                       permit_signature=permit)


def sign_decision(account: Any, to_sign: DecisionToSign) -> DecisionRequest:
    """The owner's decision on a pending payment, signed by ``account``."""
    return DecisionRequest(approve=to_sign.approve, nonce=to_sign.nonce, deadline=to_sign.deadline,
                           signature=_sign(account, to_sign.typed_data))
