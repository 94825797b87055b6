"""What the stack tests need of the devnet ``bursar up`` runs (apps/bursar/tests/sdk.rs starts
it and says where everything is): its USDC (the devnet's first account mints it), a fresh
owner holding some, and an allowlist."""

from __future__ import annotations

import json
import os

import pytest
from eth_account import Account
from web3 import Web3

OPERATOR_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
TOKEN_ABI = [
    {"type": "function", "name": "mint", "stateMutability": "nonpayable",
     "inputs": [{"name": "to", "type": "address"}, {"name": "amount", "type": "uint256"}],
     "outputs": [{"name": "", "type": "bool"}]},
    {"type": "function", "name": "balanceOf", "stateMutability": "view",
     "inputs": [{"name": "account", "type": "address"}], "outputs": [{"name": "", "type": "uint256"}]},
]


def env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.skip(f"{name} is not set: apps/bursar/tests/sdk.rs runs this against bursar up")
    return value


class Devnet:
    def __init__(self) -> None:
        self.w3 = Web3(Web3.HTTPProvider(env("BURSAR_RPC_URL")))
        self.record = json.load(open(env("BURSAR_DEPLOYMENT")))
        self.operator = Account.from_key(OPERATOR_KEY)
        self.usdc = Web3.to_checksum_address(self.record["evm"]["usdc"]["address"])
        self.token = self.w3.eth.contract(address=self.usdc, abi=TOKEN_ABI)
        registry = self.record["contracts"]["counterpartyRegistry"]
        self.registry = self.w3.eth.contract(address=Web3.to_checksum_address(registry["address"]), abi=registry["abi"])

    def _send(self, call):
        tx = call.build_transaction({
            "from": self.operator.address,
            "nonce": self.w3.eth.get_transaction_count(self.operator.address, "pending"),
        })
        signed = self.operator.sign_transaction(tx)
        receipt = self.w3.eth.wait_for_transaction_receipt(self.w3.eth.send_raw_transaction(signed.raw_transaction))
        assert receipt["status"] == 1
        return receipt

    def balance(self, of: str) -> int:
        return self.token.functions.balanceOf(Web3.to_checksum_address(of)).call()

    def funded_owner(self, amount: int):
        owner = Account.create()
        self._send(self.token.functions.mint(owner.address, amount))
        return owner

    def allowlist(self, payees: list[str], label: str) -> str:
        receipt = self._send(self.registry.functions.createList())
        list_id = self.registry.events.ListCreated().process_receipt(receipt)[0]["args"]["listId"]
        word = label.encode().ljust(32, b"\0")
        payees = [Web3.to_checksum_address(p) for p in payees]
        self._send(self.registry.functions.setEntries(list_id, payees, [True] * len(payees), [0] * len(payees),
                                                      [word] * len(payees)))
        return str(list_id)

    def now(self) -> int:
        return self.w3.eth.get_block("latest")["timestamp"]


@pytest.fixture(scope="session")
def devnet() -> Devnet:
    return Devnet()
