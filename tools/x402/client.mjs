// x402's official client, unmodified: @x402/fetch with an EVM scheme and a plain account (EOA)
// signer pays `URL`, as any x402 client on the web would.
//
// Environment: URL, CHAIN_ID, ASSET (the token the client may spend; x402's spend controls
// refuse tokens they do not know by default), PAYER_KEY, SCHEME ("exact", the default;
// "batch-settlement", which then needs RPC_URL; "upto") and CALLS (how many requests, 1 by
// default). Prints one JSON line per request: `{"status", "body", "paymentResponse"}` (the
// decoded PAYMENT-RESPONSE header, or null).
import { createPublicClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { x402Client, wrapFetchWithPayment, decodePaymentResponseHeader } from "@x402/fetch";
import { toClientEvmSigner } from "@x402/evm";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { BatchSettlementEvmScheme } from "@x402/evm/batch-settlement/client";
import { UptoEvmScheme } from "@x402/evm/upto/client";

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const network = `eip155:${env("CHAIN_ID")}`;
const signer = privateKeyToAccount(env("PAYER_KEY"));
const scheme = process.env.SCHEME ?? "exact";
let client;
if (scheme === "exact") {
  client = registerExactEvmScheme(new x402Client(), { signer, networks: [network] });
} else {
  const chain = createPublicClient({ transport: http(process.env.RPC_URL) });
  const evmSigner = toClientEvmSigner(signer, chain);
  client = new x402Client().register(
    network,
    scheme === "upto" ? new UptoEvmScheme(evmSigner) : new BatchSettlementEvmScheme(evmSigner),
  );
}
client.setSpendControls({ allowedAssets: [{ network, asset: env("ASSET") }] });

const pay = wrapFetchWithPayment(fetch, client);
for (let i = 0; i < Number(process.env.CALLS ?? 1); i++) {
  const response = await pay(env("URL"));
  const header = response.headers.get("payment-response");
  console.log(
    JSON.stringify({
      status: response.status,
      body: await response.text(),
      paymentResponse: header ? decodePaymentResponseHeader(header) : null,
    }),
  );
}
