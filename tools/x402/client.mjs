// x402's official client, unmodified: @x402/fetch with the exact EVM scheme and a plain
// account (EOA) signer pays `URL`, as any x402 client on the web would.
//
// Environment: URL, CHAIN_ID, ASSET (the token the client may spend; x402's spend controls
// refuse tokens they do not know by default), PAYER_KEY. Prints one JSON line:
// `{"status", "body", "paymentResponse"}` (the decoded PAYMENT-RESPONSE header, or null).
import { privateKeyToAccount } from "viem/accounts";
import { x402Client, wrapFetchWithPayment, decodePaymentResponseHeader } from "@x402/fetch";
import { registerExactEvmScheme } from "@x402/evm/exact/client";

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const network = `eip155:${env("CHAIN_ID")}`;
const signer = privateKeyToAccount(env("PAYER_KEY"));
const client = registerExactEvmScheme(new x402Client(), { signer, networks: [network] });
client.setSpendControls({ allowedAssets: [{ network, asset: env("ASSET") }] });

const response = await wrapFetchWithPayment(fetch, client)(env("URL"));
const header = response.headers.get("payment-response");
console.log(
  JSON.stringify({
    status: response.status,
    body: await response.text(),
    paymentResponse: header ? decodePaymentResponseHeader(header) : null,
  }),
);
