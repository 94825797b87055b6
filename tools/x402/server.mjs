// An x402 resource server built only from x402's official packages, as a vendor would build
// one: @x402/express's payment middleware asks for SCHEME in the given token, and its
// facilitator is either the official EVM facilitator of that scheme (@x402/evm) running in
// this process against the chain, or another facilitator over HTTP (Bursar's).
//
// Environment: RPC_URL, CHAIN_ID, ASSET, PAY_TO, AMOUNT (base units), SCHEME ("exact", the
// default; "batch-settlement"; "upto", which settles CHARGE of at most AMOUNT), and
// FACILITATOR: "official" (then FACILITATOR_KEY, the key its transactions are sent from and,
// for batch-settlement, its receiver authorizer) or a facilitator's base URL. Serves
// `GET /report` behind the payment on 127.0.0.1 and prints `{"port": N}` as its first stdout
// line once it is listening; a failed settlement is told on stderr. With batch-settlement,
// `POST /channels/settle` runs x402's channel manager once — claim every voucher, settle, refund
// the channels — and answers what it did (`refunds: {error}` when a refund was refused).
import express from "express";
import { createWalletClient, defineChain, http, publicActions } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { x402Facilitator } from "@x402/core/facilitator";
import { HTTPFacilitatorClient } from "@x402/core/server";
import { x402ResourceServer, paymentMiddleware, setSettlementOverrides } from "@x402/express";
import { toFacilitatorEvmSigner } from "@x402/evm";
import { registerExactEvmScheme } from "@x402/evm/exact/facilitator";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { BatchSettlementEvmScheme as BatchFacilitator } from "@x402/evm/batch-settlement/facilitator";
import {
  BatchSettlementChannelManager,
  BatchSettlementEvmScheme as BatchServer,
} from "@x402/evm/batch-settlement/server";
import { UptoEvmScheme as UptoFacilitator } from "@x402/evm/upto/facilitator";
import { UptoEvmScheme as UptoServer } from "@x402/evm/upto/server";

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const rpc = env("RPC_URL");
const network = `eip155:${env("CHAIN_ID")}`;
const scheme = process.env.SCHEME ?? "exact";

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
  const facilitator =
    scheme === "exact"
      ? registerExactEvmScheme(new x402Facilitator(), { signer, networks: [network] })
      : new x402Facilitator().register(
          network,
          scheme === "upto" ? new UptoFacilitator(signer) : new BatchFacilitator(signer, account),
        );
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
const serverScheme = {
  exact: () => new ExactEvmScheme(),
  upto: () => new UptoServer(),
  "batch-settlement": () => new BatchServer(env("PAY_TO")),
}[scheme]();
const server = new x402ResourceServer(facilitator).register(network, serverScheme);
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
            scheme,
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
app.get("/report", (_req, res) => {
  if (scheme === "upto") setSettlementOverrides(res, { amount: env("CHARGE") });
  res.json({ report: "all quiet" });
});

if (scheme === "batch-settlement") {
  const manager = new BatchSettlementChannelManager({
    scheme: serverScheme,
    facilitator,
    receiver: env("PAY_TO"),
    token: env("ASSET"),
    network,
  });
  app.post("/channels/settle", async (_req, res) => {
    try {
      const claims = await manager.claim();
      const settled = await manager.settle();
      // x402's manager asks a refund of every channel, even one with nothing left (which
      // the escrow refuses): told apart, not fatal.
      let refunds;
      try {
        refunds = await manager.refund();
      } catch (e) {
        refunds = { error: e instanceof Error ? e.message : String(e) };
      }
      res.json({ claims, settled, refunds });
    } catch (e) {
      res.status(500).json({ error: e instanceof Error ? e.message : String(e) });
    }
  });
}

const listener = app.listen(0, "127.0.0.1", () => {
  console.log(JSON.stringify({ port: listener.address().port }));
});
