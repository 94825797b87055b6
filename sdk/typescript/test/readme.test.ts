// The README's host integration, run as written: its block is taken from README.md, `e2b` and
// `bursar-sdk` pointed at the E2B recorder and this package's sources, and its `startAgent`
// called with an owner holding USDC; the session it opens pays, and the sandbox it asked E2B
// for got the session's token and the provider tags.
import { readFileSync, writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { SandboxClient } from "../src/index.js";
import * as devnet from "./devnet.js";
import { Sandbox } from "./e2b-stub.js";

const stack = process.env.BURSAR_RELAYER_URL ? describe : describe.skip;

stack("the README's host integration", () => {
  it("runs as written", async () => {
    const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
    const block = readme.split("<!-- host-integration")[1]!.split("```ts")[1]!.split("```")[0]!;
    const file = new URL("./readme-snippet.gen.ts", import.meta.url);
    writeFileSync(file, block.replace('from "e2b"', 'from "./e2b-stub.js"').replace('from "bursar-sdk"', 'from "../src/index.js"'));
    const { startAgent } = await import(file.href);

    const payee = devnet.env("X402_PAY_TO") as `0x${string}`;
    const owner = await devnet.fundedOwner(20_000_000n);
    const listId = await devnet.allowlist([payee], "readme");
    const { session } = await startAgent(owner, devnet.usdc(), listId);
    expect(session.status).toBe("open");

    const asked = Sandbox.created.at(-1)!;
    expect(asked.envs.BURSAR_CAPABILITY_TOKEN).toBe(session.capabilityToken);
    expect(asked.metadata).toMatchObject({ bursar_session: session.sessionId });
    const sandbox = new SandboxClient({ baseUrl: asked.envs.BURSAR_RELAYER_URL!, capabilityToken: asked.envs.BURSAR_CAPABILITY_TOKEN! });
    const before = await devnet.balance(payee);
    expect((await sandbox.pay({ to: payee, amount: "0.25 USDC", purpose: "readme" })).status).toBe("confirmed");
    expect((await devnet.balance(payee)) - before).toBe(250_000n);
  });
});
