"""Prints the address that signed an audit export's manifest, as the README tells an auditor
to check it: EIP-191 personal_sign of keccak256 of the manifest's JSON without `signature`.
Usage: python recover.py EXPORT.ndjson (with eth-account, as tools/conformance pins it)."""

import json
import sys

from eth_account import Account
from eth_account.messages import encode_defunct
from eth_utils import keccak

with open(sys.argv[1], encoding="utf-8") as f:
    last_line = f.read().strip().split("\n")[-1]
manifest = json.loads(last_line)["manifest"]
signature = manifest.pop("signature")
json_text = json.dumps(manifest, separators=(",", ":"))
print(Account.recover_message(encode_defunct(primitive=keccak(text=json_text)), signature=signature))
