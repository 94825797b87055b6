// The audit explorer's session page: its charts (uPlot, bundled) and the export checked in the
// browser. Everything else on the page is server-rendered.
import uPlot from "uplot";
import { el, localTimes, pageData, say } from "./common.js";
import { verifyExport } from "./verify.js";

interface Charts {
  sessionId: string;
  exportSigner: string;
  symbol: string;
  /** Executed payments in chain order: unix seconds, token units spent in the period so far. */
  spend: { t: number[]; periodSpent: number[]; total: number[]; budget: number | null };
  byCounterparty: { labels: string[]; amounts: number[] };
}

// The search page has no charts.
const data = document.getElementById("charts") ? pageData<Charts>("charts") : null;

function width(node: HTMLElement): number {
  return Math.max(320, Math.min(node.clientWidth || 720, 960));
}

function spendChart(data: Charts): void {
  const node = document.getElementById("spend-chart");
  const { t, periodSpent, total, budget } = data.spend;
  if (!node || t.length === 0) return;
  const series: uPlot.Series[] = [
    {},
    { label: `spent this period (${data.symbol})`, stroke: "#1d4ed8", width: 2, paths: uPlot.paths.stepped!({ align: 1 }), points: { show: true, size: 6 } },
    { label: `spent in all (${data.symbol})`, stroke: "#047857", width: 2, dash: [6, 4], paths: uPlot.paths.stepped!({ align: 1 }) },
  ];
  const columns: uPlot.AlignedData = [t, periodSpent, total];
  if (budget !== null) {
    series.push({ label: `period budget (${data.symbol})`, stroke: "#b91c1c", width: 1, dash: [2, 4], points: { show: false } });
    columns.push(t.map(() => budget));
  }
  new uPlot({ width: width(node), height: 260, series, scales: { x: { time: true } }, axes: [{}, { label: data.symbol }] }, columns, node);
  node.dataset.points = String(t.length);
}

function counterpartyChart(data: Charts): void {
  const node = document.getElementById("counterparty-chart");
  const { labels, amounts } = data.byCounterparty;
  if (!node || labels.length === 0) return;
  const x = labels.map((_, i) => i);
  new uPlot(
    {
      width: width(node),
      height: 220,
      series: [{}, { label: `paid (${data.symbol})`, fill: "#93c5fd", stroke: "#1d4ed8", paths: uPlot.paths.bars!({ size: [0.6, 80] }), points: { show: false } }],
      scales: { x: { time: false, range: [-0.5, labels.length - 0.5] } },
      axes: [{ values: (_u, ticks) => ticks.map((i) => labels[i] ?? ""), splits: () => x }, { label: data.symbol }],
    },
    [x, amounts],
    node,
  );
  node.dataset.points = String(labels.length);
}

async function verifyText(data: Charts, text: string, source: string): Promise<void> {
  const verdict = verifyExport(text, data.exportSigner, data.sessionId);
  const out = document.getElementById("verdict")!;
  out.replaceChildren(el("strong", verdict.ok ? "Verified" : "Does not verify"), el("span", ` (${source}): ${verdict.message}`));
  out.className = verdict.ok ? "verdict ok" : "verdict error";
  if (verdict.badRow !== undefined) out.dataset.badRow = String(verdict.badRow);
  else delete out.dataset.badRow;
  say(verdict.ok ? "The export verifies." : "The export does not verify.", verdict.ok ? "ok" : "error");
}

function exportChecks(data: Charts): void {
  const file = document.getElementById("export-file") as HTMLInputElement | null;
  file?.addEventListener("change", async () => {
    const chosen = file.files?.[0];
    if (chosen) await verifyText(data, await chosen.text(), chosen.name);
  });
  for (const button of document.querySelectorAll<HTMLButtonElement>("button[data-verify-url]")) {
    button.addEventListener("click", async () => {
      const url = button.dataset.verifyUrl!;
      const res = await fetch(url, { credentials: "omit" });
      await verifyText(data, await res.text(), `the indexer's ${button.dataset.format} export`);
    });
  }
}

localTimes();
if (data) {
  spendChart(data);
  counterpartyChart(data);
  exportChecks(data);
}
