// What the stack tests need of the devnet `bursar up` runs: its USDC (the devnet's first
// account mints it there), a fresh owner holding some, and an allowlist.
import { readFileSync } from "node:fs";
import { createPublicClient, createWalletClient, defineChain, http, parseAbi, parseEventLogs, type Abi, type Address } from "viem";
import { generatePrivateKey, mnemonicToAccount, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";

export const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: apps/bursar/tests/sdk.rs runs this against bursar up`);
  return value;
};

const chain = () =>
  defineChain({
    id: 412346,
    name: "bursar devnet",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [env("BURSAR_RPC_URL")] } },
  });

const token = parseAbi([
  "function mint(address to, uint256 amount) returns (bool)",
  "function balanceOf(address account) view returns (uint256)",
]);

const record = () => JSON.parse(readFileSync(env("BURSAR_DEPLOYMENT"), "utf8"));

/** The devnet's USDC. */
export const usdc = (): Address => record().evm.usdc.address;

const rpc = () => createPublicClient({ chain: chain(), transport: http() });
const operator = () =>
  createWalletClient({
    account: mnemonicToAccount("test test test test test test test test test test test junk"),
    chain: chain(),
    transport: http(),
  });

/** `of`'s USDC. */
export const balance = (of: Address) => rpc().readContract({ address: usdc(), abi: token, functionName: "balanceOf", args: [of] });

/** A fresh owner holding `amount` USDC (base units). */
export async function fundedOwner(amount: bigint): Promise<PrivateKeyAccount> {
  const owner = privateKeyToAccount(generatePrivateKey());
  const hash = await operator().writeContract({ address: usdc(), abi: token, functionName: "mint", args: [owner.address, amount] });
  await rpc().waitForTransactionReceipt({ hash });
  return owner;
}

/** A new allowlist of `payees` (no caps; `label` on each): its id. */
export async function allowlist(payees: Address[], label: string): Promise<string> {
  const registry = record().contracts.counterpartyRegistry;
  const abi = registry.abi as Abi;
  const created = await rpc().waitForTransactionReceipt({
    hash: await operator().writeContract({ address: registry.address, abi, functionName: "createList" }),
  });
  const [event] = parseEventLogs({ abi, logs: created.logs, eventName: "ListCreated" }) as unknown as { args: { listId: bigint } }[];
  const listId = event!.args.listId;
  const word = ("0x" + Buffer.from(label).toString("hex").padEnd(64, "0")) as `0x${string}`;
  const args = [listId, payees, payees.map(() => true), payees.map(() => 0n), payees.map(() => word)];
  await rpc().waitForTransactionReceipt({
    hash: await operator().writeContract({ address: registry.address, abi, functionName: "setEntries", args }),
  });
  return listId.toString();
}

/** The chain's time now (unix seconds). */
export const chainNow = async () => Number((await rpc().getBlock()).timestamp);
