import type { Hex, TypedDataDefinition } from "viem";
import type { components } from "./generated/relayer.js";

type S = components["schemas"];

/** Anything that signs EIP-712 typed data as viem does: a local account, a wallet client's account. */
export interface TypedDataSigner {
  signTypedData(typedData: TypedDataDefinition): Promise<Hex>;
}

/** `eth_signTypedData_v4` JSON as the relayer answers it. */
interface TypedDataJson {
  types: Record<string, { name: string; type: string }[]>;
  primaryType: string;
  domain: Record<string, unknown>;
  message: Record<string, unknown>;
}

/**
 * The relayer's typed data (JSON, integers as decimal strings) as viem's `signTypedData` takes
 * it: integers as bigints, `EIP712Domain` left to viem.
 */
export function toViem(json: object): TypedDataDefinition {
  const t = json as TypedDataJson;
  const { EIP712Domain: _, ...types } = t.types;
  const convert = (type: string, value: unknown): unknown => {
    if (/^u?int\d*$/.test(type)) return BigInt(value as string | number);
    const fields = types[type];
    if (fields && value && typeof value === "object") {
      return Object.fromEntries(fields.map((f) => [f.name, convert(f.type, (value as Record<string, unknown>)[f.name])]));
    }
    return value;
  };
  const domainFields = t.types.EIP712Domain ?? [];
  const domain = Object.fromEntries(
    domainFields.map((f) => [f.name, convert(f.type, t.domain[f.name])]),
  );
  return {
    domain,
    types,
    primaryType: t.primaryType,
    message: convert(t.primaryType, t.message) as Record<string, unknown>,
  } as unknown as TypedDataDefinition;
}

/**
 * The owner's signatures of a prepared session — `OpenSession`, and the deposit's permit when
 * the token has one — for `HostClient.openSession`. The owner signs in their own wallet; this
 * helper is for an owner whose key a program holds, or to see what a wallet will be asked.
 */
export async function signPrepared(owner: TypedDataSigner, prepared: S["Prepared"]): Promise<S["OpenRequest"]> {
  const ownerSignature = await owner.signTypedData(toViem(prepared.typedData.openSession));
  const permit = prepared.typedData.permit;
  const permitSignature = permit ? await owner.signTypedData(toViem(permit)) : "0x";
  return { preparedId: prepared.preparedId, ownerSignature, permitSignature };
}

/** The owner's signature of a decision on a pending payment, for `HostClient.decide`. */
export async function signDecision(owner: TypedDataSigner, toSign: S["DecisionToSign"]): Promise<S["DecisionRequest"]> {
  const signature = await owner.signTypedData(toViem(toSign.typedData));
  return { approve: toSign.approve, nonce: toSign.nonce, deadline: toSign.deadline, signature };
}
