// Drives Bursar's MCP server with the official TypeScript SDK, as an agent's MCP client would:
// connects over stdio (spawning `bursar mcp`) or Streamable HTTP (the relayer's /mcp), lists
// the tools, then calls the ones named on the command line in order.
//
//   node client.mjs stdio  <bursar binary> '<calls JSON>'   (env: BURSAR_RELAYER_URL, BURSAR_CAPABILITY_TOKEN)
//   node client.mjs http   <relayer URL>   '<calls JSON>'   (env: BURSAR_CAPABILITY_TOKEN)
//
// <calls JSON> is [{"name": "pay", "arguments": {...}}, ...]. Prints one JSON object:
// {"server": serverInfo, "tools": [{name, description, inputSchema}], "results": [CallToolResult]}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, target, callsJson] = process.argv.slice(2);
const calls = JSON.parse(callsJson ?? "[]");
const token = process.env.BURSAR_CAPABILITY_TOKEN ?? "";

const transport =
  mode === "stdio"
    ? new StdioClientTransport({ command: target, args: ["mcp"], env: process.env, stderr: "inherit" })
    : new StreamableHTTPClientTransport(new URL(`${target}/mcp`), {
        requestInit: { headers: token ? { Authorization: `Bearer ${token}` } : {} },
      });

const client = new Client({ name: "bursar-tests", version: "1.0.0" });
try {
  await client.connect(transport);
} catch (e) {
  console.log(JSON.stringify({ connectError: String(e) }));
  process.exit(0);
}
const { tools } = await client.listTools();
const results = [];
for (const call of calls) {
  try {
    results.push(await client.callTool(call));
  } catch (e) {
    results.push({ protocolError: String(e) });
  }
}
console.log(JSON.stringify({ server: client.getServerVersion(), tools, results }));
await client.close();
