// What every page's script shares: local times, a status line, JSON requests.

/** Shows each `<time data-unix>` in the reader's own time zone (the server writes UTC). */
export function localTimes(root: ParentNode = document): void {
  const format = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "long" });
  for (const el of root.querySelectorAll<HTMLTimeElement>("time[data-unix]")) {
    const seconds = Number(el.dataset.unix);
    if (Number.isFinite(seconds)) {
      el.title = el.textContent ?? "";
      el.textContent = format.format(new Date(seconds * 1000));
    }
  }
}

/** The page's data block (`<script type="application/json" id=…>`), parsed. */
export function pageData<T>(id: string): T {
  const el = document.getElementById(id);
  if (!el?.textContent) throw new Error(`the page has no #${id}`);
  return JSON.parse(el.textContent) as T;
}

/** Says `text` in the page's live status line; `kind` colours it. */
export function say(text: string, kind: "info" | "ok" | "error" = "info"): void {
  const el = document.getElementById("status");
  if (!el) return;
  el.textContent = text;
  el.className = `status ${kind}`;
}

/** An error the API answered: its stable code and message. */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

/** A JSON request to this service; errors become [`ApiError`]s. */
export async function request<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
  const res = await fetch(path, {
    method,
    headers: { accept: "application/json", ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "omit",
  });
  const text = await res.text();
  const json = text ? JSON.parse(text) : null;
  if (!res.ok) {
    const err = json ?? {};
    throw new ApiError(res.status, err.code ?? `http_${res.status}`, err.message ?? res.statusText);
  }
  return json as T;
}

/** `el` with `text`, and children appended. */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, text?: string | null, ...children: Node[]): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (text != null) node.textContent = text;
  node.append(...children);
  return node;
}
