// The owner's wallet through EIP-1193, found by EIP-6963 (each wallet announces itself) or,
// for wallets that do not announce, `window.ethereum`.

export interface Eip1193 {
  request(args: { method: string; params?: unknown[] }): Promise<unknown>;
}

export interface Wallet {
  name: string;
  provider: Eip1193;
}

interface Announcement extends Event {
  detail: { info: { name: string; uuid: string }; provider: Eip1193 };
}

/** Wallets that answer within this page's life: announced ones, then `window.ethereum`. */
export function discover(onChange: (wallets: Wallet[]) => void): void {
  const found = new Map<string, Wallet>();
  const injected = (window as unknown as { ethereum?: Eip1193 }).ethereum;
  const publish = () => {
    const list = [...found.values()];
    // A wallet that announces itself is usually window.ethereum too: list it once.
    if (injected && !list.some((w) => w.provider === injected)) {
      list.push({ name: "Browser wallet", provider: injected });
    }
    onChange(list);
  };
  window.addEventListener("eip6963:announceProvider", (event) => {
    const { info, provider } = (event as Announcement).detail;
    found.set(info.uuid, { name: info.name, provider });
    publish();
  });
  window.dispatchEvent(new Event("eip6963:requestProvider"));
  publish();
}

/** A wallet's refusal as a person reads it (EIP-1193 codes). */
export function walletError(e: unknown): string {
  const err = e as { code?: number; message?: string };
  if (err?.code === 4001) return "You rejected the request in your wallet: nothing was submitted.";
  if (err?.code === 4100) return "Your wallet did not authorize this site: connect it first.";
  if (err?.code === 4902) return "Your wallet does not know this chain.";
  return `Your wallet refused: ${err?.message ?? String(e)}`;
}
