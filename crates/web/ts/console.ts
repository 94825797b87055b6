// The host console (`/console`): the host's sessions by state, payments by status, webhook
// deliveries (dead ones replayable), each sandbox's lifecycle events and metering charges.
// It reads the relayer's API with the host's key, which the host types into the page: the key
// stays in this tab's sessionStorage and goes only into `Authorization` headers, never into a
// URL.
import { ApiError, el, request, say } from "./common.js";

const KEY = "bursar.hostKey";

interface Session {
  sessionId: string;
  status: string;
  owner: string;
  provider: string | null;
  sandboxId: string | null;
  sandboxState: string | null;
  capabilityRevoked: boolean;
  createdAt: number;
  lifecycle?: { kind: string; lifecycle: string; at: number; action: string; source: string }[];
  metering?: { run: string; amount: string; metered: string; paymentId: string | null; error: string | null; createdAt: number }[];
}

interface Payment {
  id: string;
  status: string;
  sessionId: string;
  to: string;
  amount: string;
  transactionHash: string | null;
  error: { code: string } | null;
  createdAt: number;
  approvalUrl?: string | null;
}

interface Endpoint {
  id: string;
  url: string;
  events: string[];
}

interface Delivery {
  messageId: string;
  eventType: string;
  status: string;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  createdAt: number;
}

const api = <T>(method: string, path: string) =>
  request<T>(method, path, undefined, { authorization: `Bearer ${sessionStorage.getItem(KEY) ?? ""}` });

const when = (ms: number) => new Date(ms).toLocaleString();

/** `0x1234…abcd` for a long hex value, the whole in its title. */
function short(hex: string): HTMLElement {
  const code = el("code", hex.length > 14 ? `${hex.slice(0, 6)}…${hex.slice(-4)}` : hex);
  code.title = hex;
  return code;
}

/** A session's state as a host reads it: its token revoked, or the relayer's status. */
const state = (s: Session) => (s.capabilityRevoked ? "revoked" : s.status);

function table(caption: string, head: string[], rows: (string | Node)[][]): HTMLTableElement {
  const t = el("table");
  t.append(el("caption", caption));
  const tr = el("tr");
  for (const h of head) {
    const th = el("th", h);
    th.scope = "col";
    tr.append(th);
  }
  t.append(el("thead", null, tr));
  const body = el("tbody");
  for (const r of rows) body.append(el("tr", null, ...r.map((c) => (typeof c === "string" ? el("td", c) : el("td", null, c)))));
  if (rows.length === 0) body.append(el("tr", null, el("td", "none")));
  t.append(body);
  return t;
}

function counts<T>(items: T[], key: (t: T) => string): string {
  const by = new Map<string, number>();
  for (const i of items) by.set(key(i), (by.get(key(i)) ?? 0) + 1);
  return [...by].map(([k, n]) => `${k}: ${n}`).join(" · ") || "none";
}

async function sessionDetail(id: string): Promise<void> {
  const s = await api<Session>("GET", `/v1/sessions/${id}`);
  const out = document.getElementById("session-detail")!;
  out.replaceChildren(
    el("h3", `Session ${s.sessionId}`),
    table(
      "Lifecycle events of its sandbox",
      ["when", "source", "event", "meaning", "what it did"],
      (s.lifecycle ?? []).map((e) => [new Date(e.at * 1000).toLocaleString(), e.source, e.kind, e.lifecycle, e.action]),
    ),
    table(
      "Metering charges",
      ["when", "run", "charge", "metered in all", "payment"],
      (s.metering ?? []).map((c) => [when(c.createdAt), c.run, c.amount, c.metered, c.paymentId ?? c.error ?? ""]),
    ),
  );
  out.focus();
}

async function deliveries(endpoint: Endpoint): Promise<HTMLElement> {
  const { deliveries } = await api<{ deliveries: Delivery[] }>("GET", `/v1/webhooks/${endpoint.id}/deliveries`);
  const rows = deliveries.map((d) => {
    const cells: (string | Node)[] = [when(d.createdAt), d.eventType, d.status, String(d.attempts), d.lastError ?? String(d.lastStatus ?? "")];
    if (d.status === "dead") {
      const b = el("button", "Replay");
      b.type = "button";
      b.addEventListener("click", async () => {
        await api("POST", `/v1/webhooks/${endpoint.id}/deliveries/${d.messageId}/replay`);
        say(`Delivery ${d.messageId} queued again.`, "ok");
        b.disabled = true;
      });
      cells.push(b);
    } else cells.push("");
    return cells;
  });
  return table(`Deliveries to ${endpoint.url} (${counts(deliveries, (d) => d.status)})`, ["emitted", "event", "status", "attempts", "last answer", ""], rows);
}

async function load(): Promise<void> {
  const [{ sessions }, { payments }, { webhooks: endpoints }] = await Promise.all([
    api<{ sessions: Session[] }>("GET", "/v1/sessions?limit=1000"),
    api<{ payments: Payment[] }>("GET", "/v1/host/payments?limit=1000"),
    api<{ webhooks: Endpoint[] }>("GET", "/v1/webhooks"),
  ]);
  const sessionRows = sessions.map((s) => {
    const b = el("button", s.sessionId.slice(0, 10) + "…");
    b.type = "button";
    b.title = s.sessionId;
    b.addEventListener("click", () => void sessionDetail(s.sessionId).catch(fail));
    return [b, state(s), s.provider ?? "", s.sandboxId ?? "", s.sandboxState ?? "", when(s.createdAt)];
  });
  const paymentRows = payments.map((p) => {
    let status: string | Node = p.status;
    if (p.approvalUrl) {
      const a = el("a", `${p.status}: owner's page`);
      a.href = p.approvalUrl;
      status = a;
    }
    const outcome = p.transactionHash ? short(p.transactionHash) : (p.error?.code ?? "");
    return [p.id, status, short(p.sessionId), short(p.to), p.amount, outcome, when(p.createdAt)];
  });
  document.getElementById("console")!.replaceChildren(
    el("h2", "Sessions"),
    el("p", counts(sessions, state)),
    table("Sessions, newest first", ["session", "state", "provider", "sandbox", "sandbox state", "prepared"], sessionRows),
    el("section", null),
    el("h2", "Payments"),
    el("p", counts(payments, (p) => p.status)),
    table("Payments, newest first", ["payment", "status", "session", "payee", "amount (base units)", "transaction or error", "accepted"], paymentRows),
    el("h2", "Webhook deliveries"),
    ...(await Promise.all(endpoints.map(deliveries))),
  );
  const detail = el("section");
  detail.id = "session-detail";
  detail.tabIndex = -1;
  document.getElementById("console")!.append(detail);
  say(`${sessions.length} sessions, ${payments.length} payments, ${endpoints.length} webhook endpoints.`, "ok");
}

function fail(e: unknown): void {
  if (e instanceof ApiError && e.status === 401) {
    sessionStorage.removeItem(KEY);
    say("The relayer does not know that key: enter it again.", "error");
  } else say(e instanceof ApiError ? `${e.code}: ${e.message}` : String(e), "error");
}

const form = document.getElementById("key-form") as HTMLFormElement;
form.addEventListener("submit", (event) => {
  event.preventDefault();
  const input = document.getElementById("host-key") as HTMLInputElement;
  sessionStorage.setItem(KEY, input.value.trim());
  input.value = "";
  void load().catch(fail);
});
document.getElementById("forget")?.addEventListener("click", () => {
  sessionStorage.removeItem(KEY);
  document.getElementById("console")!.replaceChildren();
  say("The key is forgotten.");
});
if (sessionStorage.getItem(KEY)) void load().catch(fail);
