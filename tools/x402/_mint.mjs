import { createWalletClient, http, publicActions, defineChain, parseAbi } from "viem";
import { privateKeyToAccount } from "viem/accounts";
const rpc = process.env.RPC_URL;
const chain = defineChain({ id: Number(process.env.CHAIN_ID), name: "d", nativeCurrency: { name: "E", symbol: "E", decimals: 18 }, rpcUrls: { default: { http: [rpc] } } });
const op = createWalletClient({ account: privateKeyToAccount(process.env.KEY), chain, transport: http(rpc) }).extend(publicActions);
const abi = parseAbi(["function mint(address,uint256) returns (bool)", "function balanceOf(address) view returns (uint256)", "function approve(address,uint256) returns (bool)"]);
const [cmd, a, b] = process.argv.slice(2);
if (cmd === "mint") { const h = await op.writeContract({ address: process.env.USDC, abi, functionName: "mint", args: [a, BigInt(b)] }); await op.waitForTransactionReceipt({ hash: h }); }
if (cmd === "approve") { const h = await op.writeContract({ address: process.env.USDC, abi, functionName: "approve", args: [a, BigInt(b)] }); await op.waitForTransactionReceipt({ hash: h }); }
if (cmd === "bal") console.log(String(await op.readContract({ address: process.env.USDC, abi, functionName: "balanceOf", args: [a] })));
