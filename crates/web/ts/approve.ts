// The owner's approval pages: a prepared session's terms (`/approve/{preparedId}`) or a payment
// waiting for co-signature (`/approve/pending/{paymentId}`). The owner connects a wallet; the
// page checks the chain and the account before anything is signed, has the wallet sign the
// typed data shown (its digest computed here), and sends the signatures to the relayer.
import { ApiError, el, localTimes, pageData, request, say } from "./common.js";
import { digest, type TypedData } from "./eip712.js";
import { bytesToHex } from "./hex.js";
import { discover, walletError, type Wallet } from "./wallet.js";

interface SessionApproval {
  kind: "session";
  owner: string;
  chainId: number;
  submit: string;
  typedData: { name: string; data: TypedData }[];
}

interface PendingApproval {
  kind: "pending";
  owner: string;
  chainId: number;
  submit: string;
  decision: string;
}

type Approval = SessionApproval | PendingApproval;

interface Opened {
  sessionId: string;
  status: string;
  transactionHash: string | null;
  sessionUrl: string | null;
}

interface DecisionToSign {
  approve: boolean;
  nonce: string;
  deadline: number;
  typedData: TypedData;
}

interface Decided {
  approve: boolean;
  paymentId: string | null;
}

// A used or expired link's page has nothing to sign, hence no data.
const data = document.getElementById("approval") ? pageData<Approval>("approval") : null;
let busy = false;

/** The owner's account on the page's chain, or a message saying why not. */
async function connect(wallet: Wallet, data: Approval): Promise<string> {
  const accounts = (await wallet.provider.request({ method: "eth_requestAccounts" })) as string[];
  const chain = Number(BigInt((await wallet.provider.request({ method: "eth_chainId" })) as string));
  if (chain !== data.chainId) {
    throw new Refusal(`Your wallet is on chain ${chain}; these terms are for chain ${data.chainId}. Switch networks in your wallet and try again: nothing was signed.`);
  }
  const owner = data.owner.toLowerCase();
  const account = accounts.find((a) => a.toLowerCase() === owner);
  if (!account) {
    throw new Refusal(`The connected account ${accounts[0] ?? "(none)"} is not the owner ${data.owner}. Switch to the owner's account in your wallet: nothing was signed.`);
  }
  return account;
}

class Refusal extends Error {}

async function sign(wallet: Wallet, account: string, typed: TypedData): Promise<string> {
  return (await wallet.provider.request({
    method: "eth_signTypedData_v4",
    params: [account, JSON.stringify(typed)],
  })) as string;
}

async function approveSession(wallet: Wallet, d: SessionApproval): Promise<void> {
  const account = await connect(wallet, d);
  const signatures: string[] = [];
  for (const { name, data: typed } of d.typedData) {
    say(`Sign ${name} in your wallet…`);
    signatures.push(await sign(wallet, account, typed));
  }
  say("Opening the session on chain…");
  const opened = await request<Opened>("POST", d.submit, {
    ownerSignature: signatures[0],
    permitSignature: signatures[1] ?? "0x",
  });
  const done = document.getElementById("done")!;
  done.replaceChildren(
    el("h2", opened.status === "open" ? "The session is open" : "The session is opening"),
    el("p", "Session ", el("code", opened.sessionId)),
  );
  if (opened.transactionHash) done.append(el("p", "Transaction ", el("code", opened.transactionHash)));
  if (opened.sessionUrl) {
    const a = el("a", "The session's page");
    a.href = opened.sessionUrl;
    done.append(el("p", null, a));
  }
  say(opened.status === "open" ? "Opened." : "Sent: the session opens once its transaction is mined.", "ok");
}

async function decide(wallet: Wallet, d: PendingApproval, approve: boolean): Promise<void> {
  const account = await connect(wallet, d);
  const toSign = await request<DecisionToSign>("GET", `${d.decision}?approve=${approve}`);
  say(`${approve ? "Approve" : "Reject"} in your wallet…`);
  const signature = await sign(wallet, account, toSign.typedData);
  const decided = await request<Decided>("POST", d.submit, {
    approve,
    nonce: toSign.nonce,
    deadline: toSign.deadline,
    signature,
  });
  document.getElementById("done")!.replaceChildren(
    el("h2", decided.approve ? "Approved: the payment executes" : "Rejected: the payment will not be made"),
  );
  say(decided.approve ? "Approved." : "Rejected.", "ok");
}

async function act(data: Approval, wallet: Wallet, approve: boolean): Promise<void> {
  if (busy) return;
  busy = true;
  try {
    if (data.kind === "session") await approveSession(wallet, data);
    else await decide(wallet, data, approve);
    document.getElementById("actions")?.remove();
  } catch (e) {
    if (e instanceof Refusal) say(e.message, "error");
    else if (e instanceof ApiError) say(`The relayer refused (${e.code}): ${e.message}`, "error");
    else say(walletError(e), "error");
  } finally {
    busy = false;
  }
}

function showWallets(data: Approval, wallets: Wallet[]): void {
  const list = document.getElementById("wallets")!;
  if (wallets.length === 0) {
    list.replaceChildren(el("p", "No wallet found in this browser: install or unlock one (it must support EIP-1193), then reload."));
    return;
  }
  const verbs: [string, boolean][] = data.kind === "session" ? [["Approve with", true]] : [["Approve with", true], ["Reject with", false]];
  list.replaceChildren(
    ...wallets.flatMap((w) =>
      verbs.map(([verb, approve]) => {
        const b = el("button", `${verb} ${w.name}`);
        b.type = "button";
        b.className = approve ? "primary" : "secondary";
        b.addEventListener("click", () => void act(data, w, approve));
        return b;
      }),
    ),
  );
}

localTimes();
let sameDigest = true;
if (data?.kind === "session") {
  for (const { name, data: typed } of data.typedData) {
    const out = document.querySelector<HTMLElement>(`[data-digest-of="${name}"]`);
    if (out) out.textContent = bytesToHex(digest(typed));
  }
  // The relayer's digest of the terms shown must be the one of what the wallet is handed.
  const shown = document.querySelector("[data-digest]")?.textContent?.trim();
  sameDigest = shown === bytesToHex(digest(data.typedData[0].data));
  const check = document.getElementById("digest-check");
  if (check) {
    check.textContent = sameDigest ? "They match." : "They differ: do not sign.";
    check.className = sameDigest ? "digest-match" : "status error";
  }
}
if (data && sameDigest) discover((wallets) => showWallets(data, wallets));
else if (data) say("The typed data differs from the terms shown: nothing can be signed here.", "error");
