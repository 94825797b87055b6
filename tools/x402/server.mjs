// An x402 resource server built only from x402's official packages, as a vendor would build
// one: @x402/express's payment middleware asks for `exact` in the given token, and its
// facilitator is either the official exact EVM facilitator (@x402/evm) running in this process
// against the chain, or another facilitator over HTTP (Bursar's).
//
// Environment: RPC_URL, CHAIN_ID, ASSET, PAY_TO, AMOUNT (base units), and FACILITATOR:
// "official" (then FACILITATOR_KEY, the key its settlements are sent from) or a facilitator's
// base URL. Serves `GET /report` behind the payment on 127.0.0.1 and prints `{"port": N}` as
// its first stdout line once it is listening; a failed settlement is told on stderr.
import express from "express";
import { createWalletClient, defineChain, http, publicActions } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { x402Facilitator } from "@x402/core/facilitator";
import { HTTPFacilitatorClient } from "@x402/core/server";
import { x402ResourceServer, paymentMiddleware } from "@x402/express";
import { toFacilitatorEvmSigner } from "@x402/evm";
import { registerExactEvmScheme } from "@x402/evm/exact/facilitator";
import { ExactEvmScheme } from "@x402/evm/exact/server";

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const rpc = env("RPC_URL");
const network = `eip155:${env("CHAIN_ID")}`;

function officialFacilitator() {
  const chain = defineChain({
    id: Number(env("CHAIN_ID")),
    name: "bursar-devnet",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpc] } },
  });
  const account = privateKeyToAccount(env("FACILITATOR_KEY"));
  const client = createWalletClient({ account, chain, transport: http(rpc) }).extend(publicActions);
  const signer = toFacilitatorEvmSigner({
    address: account.address,
    getCode: (a) => client.getCode(a),
    readContract: (a) => client.readContract({ ...a, args: a.args ?? [] }),
    verifyTypedData: (a) => client.verifyTypedData(a),
    writeContract: (a) => client.writeContract({ ...a, args: a.args ?? [] }),
    sendTransaction: (a) => client.sendTransaction(a),
    waitForTransactionReceipt: (a) => client.waitForTransactionReceipt(a),
  });
  const facilitator = registerExactEvmScheme(new x402Facilitator(), { signer, networks: [network] });
  // The resource server takes a facilitator client; the official facilitator in process is one.
  return {
    verify: (payload, requirements) => facilitator.verify(payload, requirements),
    settle: (payload, requirements) => facilitator.settle(payload, requirements),
    getSupported: async () => facilitator.getSupported(),
  };
}

const which = env("FACILITATOR");
const facilitator =
  which === "official" ? officialFacilitator() : new HTTPFacilitatorClient({ url: which });
const server = new x402ResourceServer(facilitator).register(network, new ExactEvmScheme());
server.onSettleFailure(async (failure) => {
  console.error("settlement failed:", failure.error?.message ?? failure);
});

const app = express();
app.use(
  paymentMiddleware(
    {
      "GET /report": {
        accepts: [
          {
            scheme: "exact",
            network,
            payTo: env("PAY_TO"),
            price: {
              amount: env("AMOUNT"),
              asset: env("ASSET"),
              extra: { name: "USD Coin", version: "2" },
            },
            maxTimeoutSeconds: 120,
          },
        ],
        description: "Today's report",
        mimeType: "application/json",
      },
    },
    server,
  ),
);
app.get("/report", (_req, res) => res.json({ report: "all quiet" }));

const listener = app.listen(0, "127.0.0.1", () => {
  console.log(JSON.stringify({ port: listener.address().port }));
});
