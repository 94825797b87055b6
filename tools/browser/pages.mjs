// Drives Bursar's pages in Debian's chromium (puppeteer-core) for apps/bursar/tests/pages.rs.
// `node pages.mjs '<json>'`: the JSON names a scenario and its inputs; the script prints one
// JSON line of what the page showed and did, and the Rust test asserts on it. Every page it
// opens is also checked with axe-core (serious and critical violations are reported) and for
// Content-Security-Policy violations, and can be saved as a screenshot.
//
// The owner's wallet is an EIP-1193 provider injected before the page's scripts run, announced
// through EIP-6963 like a real extension; it forwards `eth_signTypedData_v4` to the devnet,
// which signs for its dev accounts. It can be told to be on another chain, to connect another
// account, or to reject the signature (EIP-1193 code 4001).
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import puppeteer from "puppeteer-core";

const require = createRequire(import.meta.url);
const AXE = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
const input = JSON.parse(process.argv[2]);

async function rpc(url, method, params) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return res.json();
}

/** The injected wallet: how it answers, per `wallet` ({rpc, account, chainId?, reject?}). */
function walletHandler(wallet) {
  return async (method, params) => {
    switch (method) {
      case "eth_requestAccounts":
      case "eth_accounts":
        return { result: [wallet.account] };
      case "eth_chainId":
        if (wallet.chainId !== undefined) return { result: "0x" + wallet.chainId.toString(16) };
        return rpc(wallet.rpc, method, []);
      case "eth_signTypedData_v4":
        if (wallet.reject) return { error: { code: 4001, message: "User rejected the request." } };
        return rpc(wallet.rpc, method, params);
      default:
        return { error: { code: 4200, message: `unsupported method ${method}` } };
    }
  };
}

const PROVIDER = `(() => {
  const provider = {
    isBursarTestWallet: true,
    request: ({ method, params }) => window.__bursarWallet(method, params ?? []).then((r) => {
      if (r.error) { const e = new Error(r.error.message); e.code = r.error.code; throw e; }
      return r.result;
    }),
  };
  window.ethereum = provider;
  const info = Object.freeze({ uuid: "4b1f8c3e-2a55-4d71-9c0e-5d2f0e7a9b10", name: "Test Wallet", icon: "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg'/%3E", rdns: "dev.bursar.testwallet" });
  const announce = () => window.dispatchEvent(new CustomEvent("eip6963:announceProvider", { detail: Object.freeze({ info, provider }) }));
  window.addEventListener("eip6963:requestProvider", announce);
  announce();
})();`;

const browser = await puppeteer.launch({
  executablePath: process.env.BURSAR_CHROMIUM ?? "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-dev-shm-usage", "--lang=en-US"],
});
const out = { pages: [] };

/** Opens `url` in a fresh page (with the test wallet when `wallet` is given). */
async function open(url, wallet) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1200, height: 900 });
  await page.emulateTimezone("America/New_York");
  const violations = [];
  page.on("console", (m) => {
    if (/Content Security Policy|Refused to/.test(m.text())) violations.push(m.text());
  });
  page.on("pageerror", (e) => violations.push(`page error: ${e.message}`));
  if (wallet) {
    await page.exposeFunction("__bursarWallet", walletHandler(wallet));
    await page.evaluateOnNewDocument(PROVIDER);
  }
  const res = await page.goto(url, { waitUntil: "networkidle0" });
  const headers = res.headers();
  return { page, status: res.status(), headers, violations };
}

/** axe-core's serious and critical violations on the page as it is now; a screenshot. */
async function check(name, opened) {
  const { page } = opened;
  await page.evaluate(AXE);
  const result = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length, help: v.help }));
  });
  const serious = result.filter((v) => v.impact === "serious" || v.impact === "critical");
  if (input.screenshots) {
    await page.screenshot({ path: `${input.screenshots}/${name}.png`, fullPage: true });
  }
  out.pages.push({ name, status: opened.status, csp: opened.headers["content-security-policy"] ?? null, referrerPolicy: opened.headers["referrer-policy"] ?? null, axe: serious, cspViolations: opened.violations });
}

const text = (page, selector) => page.$eval(selector, (e) => e.textContent.trim()).catch(() => null);

/** Waits until the status line says how it ended (ok or error). */
async function outcome(page) {
  await page.waitForSelector("#status.ok, #status.error", { timeout: 120_000 });
  return { ok: await page.$("#status.ok").then((e) => e !== null), status: await text(page, "#status"), done: await text(page, "#done") };
}

async function terms(page) {
  return page.$$eval("[data-term]", (els) => Object.fromEntries(els.map((e) => [e.dataset.term, e.textContent.trim().replace(/\s+/g, " ")])));
}

async function approveSession() {
  const opened = await open(input.url, input.wallet);
  const { page } = opened;
  const shown = {
    terms: await terms(page),
    lede: await text(page, "p.lede"),
    serverDigest: await text(page, "[data-digest]"),
    browserDigest: await text(page, "[data-digest-of]"),
    notice: await text(page, ".notice"),
    // Set only if text a host or the chain wrote ran as script.
    pwned: await page.evaluate(() => window.__pwned ?? null),
  };
  await check(input.name ?? "approve-session", opened);
  const buttons = await page.$$("#wallets button");
  if (buttons.length === 0) return { ...shown, buttons: 0 };
  await buttons[0].click();
  return { ...shown, buttons: buttons.length, ...(await outcome(page)) };
}

async function decidePending() {
  const opened = await open(input.url, input.wallet);
  const { page } = opened;
  const shown = { terms: await terms(page), notice: await text(page, ".notice") };
  await check(input.name ?? "approve-payment", opened);
  const button = await page.$(input.approve ? "#wallets button.primary" : "#wallets button.secondary");
  if (!button) return { ...shown, buttons: 0 };
  await button.click();
  return { ...shown, ...(await outcome(page)) };
}

/** Clears the verdict, runs `act`, and answers the verdict it leads to. */
async function verdictAfter(page, act) {
  await page.evaluate(() => {
    const v = document.getElementById("verdict");
    v.className = "verdict";
    v.textContent = "";
    delete v.dataset.badRow;
  });
  await act();
  await page.waitForSelector("#verdict.ok, #verdict.error", { timeout: 60_000 });
  return page.$eval("#verdict", (v) => ({ ok: v.classList.contains("ok"), text: v.textContent, badRow: v.dataset.badRow ?? null }));
}

/** A copy of export `text` (NDJSON or CSV) with row `row`'s blockTimestamp one second later. */
function tamper(text, row, csv) {
  const lines = text.split("\n");
  const at = csv ? row + 1 : row;
  if (csv) {
    const fields = lines[at].split(",");
    fields[4] = String(Number(fields[4]) + 1);
    lines[at] = fields.join(",");
  } else {
    lines[at] = lines[at].replace(/"blockTimestamp":(\d+)/, (_, t) => `"blockTimestamp":${Number(t) + 1}`);
  }
  return lines.join("\n");
}

async function explore() {
  const opened = await open(input.url);
  const { page } = opened;
  await check("explorer-session", opened);
  const events = await page.$$eval("#timeline tbody tr", (rows) => rows.map((r) => ({ event: r.children[3].textContent.trim(), orphaned: r.classList.contains("orphaned") })));
  const charts = await page.evaluate(() =>
    [...document.querySelectorAll(".chart")].map((c) => {
      const canvas = c.querySelector("canvas");
      let inked = 0;
      if (canvas) {
        const pixels = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
        for (let i = 3; i < pixels.length; i += 4) if (pixels[i] > 0) inked++;
      }
      return { id: c.id, points: Number(c.dataset.points ?? 0), inked };
    }),
  );
  const lineage = {
    nodes: await page.$$eval("svg.lineage g.node", (n) => n.map((x) => x.dataset.record)),
    edges: await page.$$eval("svg.lineage path.edge", (e) => e.map((x) => [x.dataset.from, x.dataset.to])),
    valid: await page.$eval("#lineage-valid", (e) => e.textContent.trim()).catch(() => null),
  };
  const state = await page.$$eval("[data-state]", (els) => Object.fromEntries(els.map((e) => [e.dataset.state, e.textContent.trim()])));
  const served = await verdictAfter(page, () => page.click('button[data-format="NDJSON"]'));
  const files = {};
  const dir = mkdtempSync(join(tmpdir(), "bursar-export-"));
  for (const format of ["ndjson", "csv"]) {
    // What the page's download link saves.
    const href = await page.$eval(`a[download$=".${format}"]`, (a) => a.href);
    const text = await (await fetch(href)).text();
    const good = join(dir, `export.${format}`);
    const bad = join(dir, `tampered.${format}`);
    writeFileSync(good, text);
    writeFileSync(bad, tamper(text, input.tamperRow, format === "csv"));
    const upload = (path) => async () => (await page.$("#export-file")).uploadFile(path);
    files[format] = { downloaded: await verdictAfter(page, upload(good)), tampered: await verdictAfter(page, upload(bad)) };
  }
  // The page as it ends: the tampered file's verdict shown.
  await check("explorer-session-tampered", { ...opened, violations: opened.violations });
  const asOf = input.asOfUrl ? await open(input.asOfUrl) : null;
  const stateThen = asOf ? await asOf.page.$$eval("[data-state]", (els) => Object.fromEntries(els.map((e) => [e.dataset.state, e.textContent.trim()]))) : null;
  if (asOf) await check("explorer-session-as-of", asOf);
  const search = await open(input.searchUrl);
  await check("explorer-search", search);
  const found = await search.page.$$eval("tbody a", (links) => links.map((a) => a.getAttribute("href")));
  let agent = null;
  if (input.agentUrl) {
    // The session page links the agent it runs for; its page tells the agent's story.
    const link = await page.$eval('a[href^="/ui/agents/"]', (a) => a.getAttribute("href")).catch(() => null);
    const shown = await open(input.agentUrl);
    await check("explorer-agent", shown);
    const agentText = (selector) => text(shown.page, selector);
    agent = {
      link,
      owner: await agentText('[data-agent="owner"]'),
      reputation: await agentText('[data-agent="reputation"]'),
      tables: await tables(shown.page, "main table"),
    };
  }
  return { events, charts, lineage, state, stateThen, served, files, found, agent };
}

const tables = (page, selector) =>
  page.$$eval(selector, (ts) => ts.map((t) => ({ caption: t.caption?.textContent ?? "", rows: [...t.tBodies[0].rows].map((r) => [...r.cells].map((c) => c.textContent.trim())) })));

async function hostConsole() {
  const opened = await open(input.url);
  const { page } = opened;
  await page.type("#host-key", input.key);
  await page.click('#key-form button[type="submit"]');
  await page.waitForSelector("#console table", { timeout: 60_000 });
  const stored = (await page.evaluate(() => sessionStorage.getItem("bursar.hostKey"))) === input.key;
  const shown = await tables(page, "#console table");
  const summaries = await page.$$eval("#console > p", (ps) => ps.map((p) => p.textContent.trim()));
  let replayed = null;
  const replay = await page.$("#console button::-p-text(Replay)");
  if (replay) {
    await replay.click();
    await page.waitForFunction(() => document.getElementById("status").textContent.includes("queued again"), { timeout: 30_000 });
    replayed = await text(page, "#status");
  }
  await page.click(`#console button[title="${input.session}"]`);
  await page.waitForSelector("#session-detail table", { timeout: 30_000 });
  const detail = await tables(page, "#session-detail table");
  await check("console", opened);
  await page.click("#forget");
  const forgotten = (await page.evaluate(() => sessionStorage.getItem("bursar.hostKey"))) === null;
  return { urlHasKey: page.url().includes(input.key), stored, tables: shown, summaries, replayed, detail, forgotten };
}

const scenarios = { "approve-session": approveSession, "decide-pending": decidePending, explore, console: hostConsole };
try {
  const run = scenarios[input.scenario];
  if (!run) throw new Error(`no scenario ${input.scenario}`);
  out.result = await run();
} catch (e) {
  out.error = String(e?.stack ?? e);
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
if (out.error) process.exit(1);
