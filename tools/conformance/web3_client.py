#!/usr/bin/env python3
"""A second, independent JSON-RPC client for the devnet: web3.py + eth-account.

Driven by devnet/tests/conformance_web3.rs, which deploys the test token, mints to the
account of --key and then checks the JSON summary this prints against the devnet's own view.

    web3_client.py --url http://127.0.0.1:PORT --key 0x... --to 0x... \
                   --token 0x... --abi token_abi.json

Steps: read chain id / blocks / balances; send a signed EIP-1559 and a legacy value transfer
and wait for their receipts; call and transact against the token; read its Transfer events
through eth_getLogs and the contract event API. Any failure raises (non-zero exit).
"""

import argparse
import json
import sys

from eth_account import Account
from web3 import Web3


# Wei balances exceed 2**64: printed as decimal strings so any JSON reader keeps them exact.


def receipt_summary(r):
    return {
        "transactionHash": r["transactionHash"].to_0x_hex(),
        "blockNumber": r["blockNumber"],
        "blockHash": r["blockHash"].to_0x_hex(),
        "status": r["status"],
        "gasUsed": r["gasUsed"],
        "effectiveGasPrice": r["effectiveGasPrice"],
        "type": r["type"],
        "logs": len(r["logs"]),
    }


def send(w3, acct, tx):
    signed = acct.sign_transaction(tx)
    tx_hash = w3.eth.send_raw_transaction(signed.raw_transaction)
    return w3.eth.wait_for_transaction_receipt(tx_hash, timeout=30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--to", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--abi", required=True)
    args = ap.parse_args()

    w3 = Web3(Web3.HTTPProvider(args.url, request_kwargs={"timeout": 30}))
    if not w3.is_connected():
        sys.exit(f"cannot reach {args.url}")
    acct = Account.from_key(args.key)
    to = Web3.to_checksum_address(args.to)
    out = {
        "clientVersion": w3.client_version,
        "chainId": w3.eth.chain_id,
        "account": acct.address,
        "startBlock": w3.eth.block_number,
    }
    latest = w3.eth.get_block("latest")
    genesis = w3.eth.get_block(0)
    out["latestHash"] = latest["hash"].to_0x_hex()
    out["genesisHash"] = genesis["hash"].to_0x_hex()
    out["gasPrice"] = w3.eth.gas_price
    out["balanceBefore"] = str(w3.eth.get_balance(acct.address))
    out["toBalanceBefore"] = str(w3.eth.get_balance(to))

    # EIP-1559 value transfer.
    base_fee = latest["baseFeePerGas"]
    nonce = w3.eth.get_transaction_count(acct.address)
    r1559 = send(w3, acct, {
        "type": 2,
        "chainId": out["chainId"],
        "nonce": nonce,
        "to": to,
        "value": 12345,
        "gas": 21000,
        "maxFeePerGas": 2 * base_fee,
        "maxPriorityFeePerGas": 0,
    })
    # Legacy (EIP-155) value transfer.
    r_legacy = send(w3, acct, {
        "chainId": out["chainId"],
        "nonce": nonce + 1,
        "to": to,
        "value": 777,
        "gas": 21000,
        "gasPrice": out["gasPrice"],
    })
    out["transfers"] = [receipt_summary(r1559), receipt_summary(r_legacy)]
    tx = w3.eth.get_transaction(r1559["transactionHash"])
    out["transfer1559"] = {"from": tx["from"], "value": tx["value"], "type": tx["type"],
                           "nonce": tx["nonce"]}
    out["balanceAfter"] = str(w3.eth.get_balance(acct.address))
    out["toBalanceAfter"] = str(w3.eth.get_balance(to))
    block = w3.eth.get_block(r1559["blockNumber"], full_transactions=True)
    out["transferBlockTxs"] = [t["hash"].to_0x_hex() for t in block["transactions"]]

    # The token: calls, a transaction, its events.
    with open(args.abi) as f:
        abi = json.load(f)
    token = w3.eth.contract(address=Web3.to_checksum_address(args.token), abi=abi)
    out["decimals"] = token.functions.decimals().call()
    out["tokenBalanceBefore"] = token.functions.balanceOf(acct.address).call()
    transfer = token.functions.transfer(to, 1000).build_transaction({
        "from": acct.address,
        "nonce": w3.eth.get_transaction_count(acct.address),
        "maxFeePerGas": 2 * base_fee,
        "maxPriorityFeePerGas": 0,
        "chainId": out["chainId"],
    })
    out["tokenTransferGasEstimate"] = transfer["gas"]
    r_token = send(w3, acct, transfer)
    out["tokenTransfer"] = receipt_summary(r_token)
    out["tokenBalanceAfter"] = token.functions.balanceOf(acct.address).call()
    out["tokenToBalance"] = token.functions.balanceOf(to).call()
    events = token.events.Transfer().process_receipt(r_token)
    out["receiptEvents"] = [
        {"from": e["args"]["from"], "to": e["args"]["to"], "value": e["args"]["value"],
         "logIndex": e["logIndex"]}
        for e in events
    ]
    raw_logs = w3.eth.get_logs({"address": token.address, "fromBlock": 0, "toBlock": "latest"})
    out["rawLogs"] = [
        {"blockNumber": l["blockNumber"], "transactionHash": l["transactionHash"].to_0x_hex(),
         "logIndex": l["logIndex"], "topics": [t.to_0x_hex() for t in l["topics"]],
         "data": l["data"].to_0x_hex()}
        for l in raw_logs
    ]
    transfers = token.events.Transfer().get_logs(from_block=0)
    out["transferEvents"] = [
        {"from": e["args"]["from"], "to": e["args"]["to"], "value": e["args"]["value"],
         "blockNumber": e["blockNumber"]}
        for e in transfers
    ]
    out["endBlock"] = w3.eth.block_number
    print(json.dumps(out))


if __name__ == "__main__":
    main()
