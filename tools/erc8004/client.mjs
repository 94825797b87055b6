#!/usr/bin/env node
// A third-party client of the ERC-8004 Identity and Reputation registries, written only
// against agent0-sdk 1.7.1's public API (npm). One JSON command on argv[2] or stdin:
//   {"rpc":"http://127.0.0.1:8547","chainId":412346,"identity":"0x8004…","reputation":"0x8004…",
//    "key":"0x…","action":"register|load|setWallet|feedback|summary|readFeedback", …}
// One JSON line on stdout; on error, a one-line message on stderr and exit status 1.
// See README.md for each action's fields.
import { SDK } from 'agent0-sdk';

// The SDK logs progress with console.*; keep stdout for the one result line.
const out = process.stdout.write.bind(process.stdout);
for (const m of ['log', 'info', 'warn', 'debug']) console[m] = (...a) => console.error(...a);

function oneLine(e) {
  const msg = e instanceof Error ? (e.message || String(e)) : String(e);
  const cause = e && e.cause && e.cause.message && !msg.includes(e.cause.message) ? ` (cause: ${e.cause.message})` : '';
  return (msg + cause).replace(/\s*\n\s*/g, ' | ');
}

async function readCommand() {
  if (process.argv[2]) return JSON.parse(process.argv[2]);
  let text = '';
  for await (const chunk of process.stdin) text += chunk;
  return JSON.parse(text);
}

function need(cmd, ...names) {
  for (const n of names) {
    if (cmd[n] === undefined || cmd[n] === null || cmd[n] === '') throw new Error(`missing "${n}"`);
  }
}

function makeSdk(cmd, key) {
  need(cmd, 'rpc', 'chainId', 'identity', 'reputation');
  const chainId = Number(cmd.chainId);
  return new SDK({
    chainId,
    rpcUrl: cmd.rpc,
    ...(key ? { privateKey: key } : {}),
    registryOverrides: { [chainId]: { IDENTITY: cmd.identity, REPUTATION: cmd.reputation } },
  });
}

// "412346:7" or 7 → "412346:7"
function fullId(cmd) {
  need(cmd, 'agentId');
  const s = String(cmd.agentId);
  return s.includes(':') ? s : `${Number(cmd.chainId)}:${s}`;
}

const tokenOf = (id) => Number(String(id).split(':').pop());

const actions = {
  async register(cmd) {
    need(cmd, 'key', 'uri');
    const sdk = makeSdk(cmd, cmd.key);
    const agent = sdk.createAgent(cmd.name || 'Bursar test agent', cmd.description || 'agent0-sdk interop test agent');
    const handle = await agent.registerHTTP(cmd.uri);
    const { result } = await handle.waitMined();
    return { agentId: result.agentId, tokenId: tokenOf(result.agentId), uri: result.agentURI, txHash: handle.hash };
  },

  async load(cmd) {
    const sdk = makeSdk(cmd, cmd.key);
    const id = fullId(cmd);
    const agent = await sdk.loadAgent(id);
    const reg = agent.getRegistrationFile();
    return {
      agentId: agent.agentId,
      uri: agent.agentURI ?? null,
      name: agent.name,
      description: agent.description,
      mcpEndpoint: agent.mcpEndpoint ?? null,
      services: reg.endpoints,
      x402Support: reg.x402support,
      active: reg.active,
      // The TS SDK's RegistrationFile has no `registrations` field: loadAgent drops it.
      registrations: reg.registrations ?? null,
      supportedTrust: reg.trustModels,
      owner: await sdk.getAgentOwner(id),
      agentWallet: (await agent.getWallet()) ?? null,
    };
  },

  async setWallet(cmd) {
    need(cmd, 'key', 'walletKey');
    const sdk = makeSdk(cmd, cmd.key);
    const wallet = await makeSdk(cmd, cmd.walletKey).chainClient.getAddress();
    const agent = await sdk.loadAgent(fullId(cmd));
    const opts = { newWalletPrivateKey: cmd.walletKey };
    if (cmd.deadline !== undefined) opts.deadline = Number(cmd.deadline);
    const handle = await agent.setWallet(wallet, opts);
    if (handle) await handle.waitMined();
    return { agentId: agent.agentId, wallet: (await agent.getWallet()) ?? null, txHash: handle ? handle.hash : null };
  },

  async feedback(cmd) {
    need(cmd, 'key', 'value');
    const sdk = makeSdk(cmd, cmd.key);
    const handle = await sdk.giveFeedback(fullId(cmd), cmd.value, cmd.tag1, cmd.tag2, cmd.endpoint);
    const { result } = await handle.waitMined();
    const [, client, index] = result.id;
    return { agentId: result.agentId, client, index: Number(index), value: result.value, txHash: handle.hash };
  },

  async summary(cmd) {
    const sdk = makeSdk(cmd, cmd.key);
    const s = await sdk.getReputationSummary(fullId(cmd), cmd.tag1, cmd.tag2);
    return { count: Number(s.count), averageValue: s.averageValue };
  },

  async readFeedback(cmd) {
    need(cmd, 'client', 'index');
    const sdk = makeSdk(cmd, cmd.key);
    // agent0-sdk 1.7.1 bug: SDK.getFeedback does not resolve the Reputation registry address the
    // way giveFeedback/getReputationSummary do, so on a fresh SDK it throws "Reputation registry
    // not available". The public getter sets it on the FeedbackManager.
    sdk.reputationRegistryAddress();
    const f = await sdk.getFeedback(fullId(cmd), cmd.client, Number(cmd.index));
    return {
      agentId: f.agentId,
      client: f.reviewer,
      index: Number(f.id[2]),
      value: f.value ?? null,
      tags: f.tags,
      endpoint: f.endpoint ?? null,
      revoked: f.isRevoked,
    };
  },
};

try {
  const cmd = await readCommand();
  const run = actions[cmd.action];
  if (!run) throw new Error(`unknown action ${JSON.stringify(cmd.action)} (one of ${Object.keys(actions).join(', ')})`);
  const result = await run(cmd);
  out(JSON.stringify(result, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)) + '\n');
  process.exit(0);
} catch (e) {
  process.stderr.write(`client.mjs: ${oneLine(e)}\n`);
  process.exit(1);
}
