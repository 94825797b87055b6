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
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
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
  const shown = { terms: await terms(page), serverDigest: await text(page, "[data-digest]"), browserDigest: await text(page, "[data-digest-of]"), notice: await text(page, ".notice") };
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

const scenarios = { "approve-session": approveSession, "decide-pending": decidePending };
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
