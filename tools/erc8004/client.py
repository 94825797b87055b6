#!/usr/bin/env python3
"""A third-party client of the ERC-8004 Identity and Reputation registries, written only
against agent0-sdk 1.7.1's public API (PyPI). Same commands as client.mjs: one JSON object on
argv[1] or stdin, one JSON line on stdout; on error, one line on stderr and exit status 1.
See README.md for each action's fields.
"""
import json
import sys
from decimal import Decimal

_stdout = sys.stdout
# The SDK and its dependencies may print; keep stdout for the one result line.
sys.stdout = sys.stderr

from agent0_sdk import SDK  # noqa: E402


def need(cmd, *names):
    for n in names:
        if cmd.get(n) in (None, ""):
            raise ValueError(f'missing "{n}"')


def make_sdk(cmd, key=None):
    need(cmd, "rpc", "chainId", "identity", "reputation")
    chain_id = int(cmd["chainId"])
    return SDK(
        chainId=chain_id,
        rpcUrl=cmd["rpc"],
        signer=key,
        registryOverrides={chain_id: {"IDENTITY": cmd["identity"], "REPUTATION": cmd["reputation"]}},
    )


def full_id(cmd):
    need(cmd, "agentId")
    s = str(cmd["agentId"])
    return s if ":" in s else f"{int(cmd['chainId'])}:{s}"


def token_of(agent_id):
    return int(str(agent_id).split(":")[-1])


def endpoint_json(ep):
    t = getattr(ep.type, "value", ep.type)
    return {"type": t, "value": ep.value, "meta": ep.meta or {}}


def act_register(cmd):
    need(cmd, "key", "uri")
    sdk = make_sdk(cmd, cmd["key"])
    agent = sdk.createAgent(cmd.get("name") or "Bursar test agent",
                            cmd.get("description") or "agent0-sdk interop test agent")
    # Python's name for the TS SDK's registerHTTP(uri).
    handle = agent.register(cmd["uri"])
    reg = handle.wait_mined().result
    return {"agentId": reg.agentId, "tokenId": token_of(reg.agentId), "uri": reg.agentURI,
            "txHash": _hex(handle.tx_hash)}


def act_load(cmd):
    sdk = make_sdk(cmd, cmd.get("key"))
    agent = sdk.loadAgent(full_id(cmd))
    reg = agent.registration_file
    return {
        "agentId": agent.agentId,
        "uri": agent.agentURI,
        "name": agent.name,
        "description": agent.description,
        "mcpEndpoint": agent.mcpEndpoint,
        "services": [endpoint_json(e) for e in reg.endpoints],
        "x402Support": reg.x402support,
        "active": reg.active,
        # The Python SDK's RegistrationFile has no `registrations` field: loadAgent drops it.
        "registrations": getattr(reg, "registrations", None),
        # Agent.trustModels is shadowed by a setter method in 1.7.1; read the file object.
        "supportedTrust": [getattr(t, "value", t) for t in reg.trustModels],
        "owner": sdk.getAgentOwner(agent.agentId),
        "agentWallet": agent.getWallet(),
    }


def act_set_wallet(cmd):
    need(cmd, "key", "walletKey")
    from eth_account import Account

    sdk = make_sdk(cmd, cmd["key"])
    wallet = Account.from_key(cmd["walletKey"]).address
    agent = sdk.loadAgent(full_id(cmd))
    kwargs = {"new_wallet_signer": cmd["walletKey"]}
    if cmd.get("deadline") is not None:
        kwargs["deadline"] = int(cmd["deadline"])
    handle = agent.setWallet(wallet, **kwargs)
    if handle is not None:
        handle.wait_mined()
    return {"agentId": agent.agentId, "wallet": agent.getWallet(),
            "txHash": _hex(handle.tx_hash) if handle is not None else None}


def act_feedback(cmd):
    need(cmd, "key", "value")
    sdk = make_sdk(cmd, cmd["key"])
    handle = sdk.giveFeedback(full_id(cmd), cmd["value"], cmd.get("tag1"), cmd.get("tag2"), cmd.get("endpoint"))
    fb = handle.wait_mined().result
    _agent, client, index = fb.id
    return {"agentId": fb.agentId, "client": client, "index": int(index), "value": fb.value,
            "txHash": _hex(handle.tx_hash)}


def act_summary(cmd):
    sdk = make_sdk(cmd, cmd.get("key"))
    agent_id = full_id(cmd)
    if cmd.get("plain"):
        # The public SDK.getReputationSummary(agentId): no tag filters, and it sends getSummary
        # with clientAddresses=[], which the registry rejects ("clientAddresses required").
        s = sdk.getReputationSummary(agent_id)
    else:
        # What the TS SDK does on-chain: getClients(agentId), then getSummary over them, through
        # the SDK's FeedbackManager (which takes clientAddresses and tags).
        clients = cmd.get("clients")
        if clients is None:
            clients = sdk.web3_client.call_contract(sdk.reputation_registry, "getClients", token_of(agent_id))
        if not clients:
            return {"count": 0, "averageValue": 0}
        s = sdk.feedback_manager.getReputationSummary(agent_id, list(clients), cmd.get("tag1"), cmd.get("tag2"))
    return {"count": int(s["count"]), "averageValue": s["averageValue"]}


def act_read_feedback(cmd):
    need(cmd, "client", "index")
    sdk = make_sdk(cmd, cmd.get("key"))
    f = sdk.getFeedback(full_id(cmd), cmd["client"], int(cmd["index"]))
    return {"agentId": f.agentId, "client": f.reviewer, "index": int(f.id[2]), "value": f.value,
            "tags": f.tags, "endpoint": f.endpoint, "revoked": bool(f.isRevoked)}


def _hex(h):
    if isinstance(h, (bytes, bytearray)):
        return "0x" + bytes(h).hex()
    h = str(h)
    return h if h.startswith("0x") else "0x" + h


ACTIONS = {
    "register": act_register,
    "load": act_load,
    "setWallet": act_set_wallet,
    "feedback": act_feedback,
    "summary": act_summary,
    "readFeedback": act_read_feedback,
}


def main():
    try:
        # JSON numbers with a fraction become Decimal, not float: the SDK encodes a float at 18
        # decimals (-3.2 -> (-3200000000000000000, 18)) where the TS SDK sends (-32, 1); a Decimal
        # (or a string) is encoded like TS, so the same command writes the same feedback.
        text = sys.argv[1] if len(sys.argv) > 1 else sys.stdin.read()
        cmd = json.loads(text, parse_float=Decimal)
        run = ACTIONS.get(cmd.get("action"))
        if run is None:
            raise ValueError(f"unknown action {cmd.get('action')!r} (one of {', '.join(ACTIONS)})")
        result = run(cmd)
    except Exception as e:  # noqa: BLE001 - every failure becomes one line on stderr
        msg = " | ".join(line.strip() for line in f"{type(e).__name__}: {e}".splitlines() if line.strip())
        sys.stderr.write(f"client.py: {msg}\n")
        return 1
    _stdout.write(json.dumps(result, default=str) + "\n")
    _stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
