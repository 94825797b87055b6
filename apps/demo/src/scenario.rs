//! The agent-session scenario: an org's vendor list; a sandbox host preparing a session through
//! the relayer, the owner signing it and a permit in its own wallet (no gas); the sandbox paying
//! within (and against) its policy over HTTP with its capability token, heart-beating, a
//! co-signed payment the owner approves, a receipt acknowledged, provenance with lineage; the
//! host revoking and closing the session and the owner's refund; the host's webhooks.
//!
//! Every step checks what the chain did — the events in the receipt and every token balance —
//! and fails with [`ScenarioError::Check`] when anything differs, so the demonstration is also
//! a test.

use alloy_primitives::{keccak256, Address, B256, U256};
use alloy_sol_types::{SolCall, SolEvent};
use bursar_bindings::counterparty::ICounterpartyRegistry;
use bursar_bindings::erc8004::session_metadata;
use bursar_bindings::evm::IFiatToken;
use bursar_bindings::receipts::{receipt_commitment, IReceiptRegistry, Receipt as PaymentReceipt};
use bursar_bindings::wallet::ISessionWallet;
use bursar_client::rpc::{Client, Receipt, RpcLog};
use bursar_client::{Key, Sender};
use bursar_deploy::DeploymentRecord;
use serde_json::json;

pub use crate::contracts::Contracts;
use crate::error::Result;
pub use crate::error::ScenarioError;
use crate::money::usd;

mod agents;

/// Where the narration goes: the CLI prints it, tests collect it.
pub trait Narrator {
    /// A new step of the story.
    fn step(&mut self, title: &str);
    /// A line of detail within the step.
    fn note(&mut self, line: &str);
}

/// Collects the narration (tests); the CLI prints it instead.
#[derive(Default)]
pub struct Transcript(pub Vec<String>);

impl Narrator for Transcript {
    fn step(&mut self, title: &str) {
        self.0.push(format!("# {title}"));
    }
    fn note(&mut self, line: &str) {
        self.0.push(line.to_string());
    }
}

/// The people and machines in the story, each with their own key.
pub struct Actors {
    /// Deployed the contracts; owns the test token (mints) — the platform operator.
    pub operator: Key,
    /// The organisation's finance admin: owns the vendor list.
    pub org: Key,
    /// Owns the session's money.
    pub owner: Key,
    /// The sandboxed agent's session key.
    pub agent: Key,
    /// May revoke the session.
    pub guardian: Key,
    /// The relayer's signer: sends every transaction of the session and pays its gas.
    pub relayer: Key,
    /// Two allowed vendors and one that is not on the list.
    pub vendor_a: Key,
    /// The second allowed vendor.
    pub vendor_b: Key,
    /// The vendor that is not on the list.
    pub vendor_c: Key,
}

impl Actors {
    /// Fresh keys for everyone but the operator, derived from `seed`: each run of the story
    /// starts from empty balances, even on a chain that ran it before.
    pub fn fresh(operator: Key, seed: &str) -> Self {
        let key = |role: &str| {
            Key::from_bytes(&keccak256(format!("bursar demo {seed} {role}")))
                .expect("a keccak output is a valid key with overwhelming probability")
        };
        Actors {
            operator,
            org: key("org"),
            owner: key("owner"),
            agent: key("agent"),
            guardian: key("guardian"),
            relayer: key("relayer"),
            vendor_a: key("vendor-a"),
            vendor_b: key("vendor-b"),
            vendor_c: key("vendor-c"),
        }
    }
}

/// Gas money the operator gives each actor that sends transactions.
pub const GAS_MONEY_WEI: u64 = 1_000_000_000_000_000_000;

/// A session's metadata when it runs for no agent: a note on its sandbox.
const SANDBOX_METADATA: &str = "sandbox e2b:sbx_7f3a (research agent)";

/// A session the story opened.
struct Opened {
    /// The sandbox's capability token.
    token: String,
    /// Its custodial key.
    session_key: Address,
    /// How the wallet announced it.
    event: ISessionWallet::SessionOpened,
}

/// What vendor A's data desk sells its dataset for: 0.50 USDC, in base units.
pub const DATASET_PRICE: u64 = 500_000;

/// The session's deposit, in whole USDC.
pub const DEPOSIT: u64 = 100;
/// The largest single payment, in whole USDC.
pub const PER_PAYMENT_CAP: u64 = 30;
/// What may be spent per period, in whole USDC.
pub const PERIOD_BUDGET: u64 = 40;
/// The budget period on a chain of the story's own.
pub const PERIOD_SECONDS: u64 = 3_600;
/// Payments above this (whole USDC) wait for the owner.
pub const CO_SIGN_THRESHOLD: u64 = 20;
/// The session's lease: the relayer renews it while the sandbox heart-beats.
pub const LEASE_SECONDS: u64 = 7_200;

/// How the story's time passes: the budget's period, the lease, and whether the story may
/// move the chain's clock to let a period pass.
#[derive(Clone, Copy, Debug)]
pub struct StoryClock {
    /// The budget period (seconds).
    pub period: u64,
    /// The lease (seconds).
    pub lease: u64,
    /// Whether the story moves the chain's clock (`evm_setNextBlockTimestamp`) rather than
    /// waiting for the period to pass.
    pub warps: bool,
}

impl StoryClock {
    /// On a devnet of the story's own: an hour's budget, a 2-hour lease, and the hour passes
    /// at once.
    pub const OWN_CHAIN: StoryClock = StoryClock {
        period: PERIOD_SECONDS,
        lease: LEASE_SECONDS,
        warps: true,
    };
    /// On a stack others use (`bursar up`): the chain's clock is left alone — moved, it would
    /// stay ahead of the wall clock for good (a block's time never goes back), and every later
    /// session's periods and leases would run on it. So the period is a minute and the story
    /// waits it out.
    pub const SHARED_CHAIN: StoryClock = StoryClock {
        period: 60,
        lease: 120,
        warps: false,
    };
}

/// `seconds` as the story says it: `hour`, `2 h`, `60 s`.
fn span(seconds: u64) -> String {
    match seconds {
        3_600 => "hour".into(),
        s if s % 3_600 == 0 => format!("{} h", s / 3_600),
        s => format!("{s} s"),
    }
}

/// The story's two agents (ERC-8004 ids).
#[derive(Clone, Copy, Debug)]
pub struct Passports {
    /// Vendor A's data desk: sells datasets, paid at vendor A's address.
    pub desk: U256,
    /// The owner's research agent: the story's session runs for it.
    pub research: U256,
}

/// What the scenario produced, for the audit trail and for tests.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// The session opened.
    pub session_id: U256,
    /// The vendor allowlist created.
    pub list_id: U256,
    /// The first block the scenario wrote.
    pub first_block: u64,
    /// Receipts of the executed payments, in order.
    pub receipt_ids: Vec<U256>,
    /// The co-signed payment that waited for the owner.
    pub pending_id: U256,
    /// Provenance records written.
    pub provenance_ids: Vec<U256>,
    /// What the owner got back at close.
    pub refund: U256,
    /// What the session spent.
    pub spent: U256,
    /// Every transaction the scenario sent, in order.
    pub transactions: Vec<B256>,
    /// The two agents with passports: vendor A's data desk and the owner's research agent.
    pub agents: Option<Passports>,
    /// The receipt of the research agent's purchase from the data desk.
    pub purchase_receipt: Option<U256>,
}

/// The scenario's state while it runs.
pub struct Scenario<'a, N: Narrator> {
    client: &'a Client,
    /// The contracts it runs against.
    pub contracts: Contracts,
    actors: Actors,
    narrator: &'a mut N,
    senders: Vec<(Address, Sender)>,
    report: Report,
    /// The relayer (in this process, or running) and the host's key and webhooks.
    host: Option<crate::host::Host>,
    /// The relayer's signers; the session is pinned to one of them.
    relayer_signers: Vec<Address>,
    /// The session's signer: its lease keeper and guardian (the relayer's first signer until
    /// the session is open).
    relayer_signer: Address,
    /// The sandbox's capability token.
    token: String,
    /// How the story's time passes.
    clock: StoryClock,
    /// The session's custodial key (the relayer holds it).
    session_key: Address,
    /// What the wallet held before this session's deposit (other sessions' escrow, on a stack
    /// that runs others).
    escrow_before: U256,
    /// The receipts of executed payments, as `ReceiptRecorded` announced them (the registry
    /// keeps only their commitments; a payee restates its receipt to acknowledge it).
    receipts: Vec<PaymentReceipt>,
    /// The executed payments' ids (`pay_…`), in the order of `receipts`.
    payment_ids: Vec<String>,
    /// The research agent's purchase from the data desk.
    purchase: Option<Purchase>,
}

/// A payment that bought something, as a record made from it names it.
#[derive(Clone, Debug)]
struct Purchase {
    payment_id: String,
    receipt_id: U256,
    receipt: PaymentReceipt,
}

/// A relayer already running (`bursar up`) for the story to use instead of its own.
#[derive(Clone, Debug)]
pub struct RunningRelayer {
    /// Its API (`http://host:port`).
    pub url: String,
    /// A host's API key on it.
    pub host_key: String,
    /// Its signers: each session is pinned to one, which sends its transactions (its lease
    /// keeper and guardian).
    pub signers: Vec<Address>,
}

/// Runs the whole story on a dev chain (it moves time forward with `evm_increaseTime`), with a
/// relayer of its own in this process.
pub async fn run<N: Narrator>(
    client: &Client,
    record: &DeploymentRecord,
    actors: Actors,
    narrator: &mut N,
) -> Result<Report> {
    run_with(client, record, actors, None, narrator).await
}

/// [`run`] against a relayer already running.
pub async fn run_against<N: Narrator>(
    client: &Client,
    record: &DeploymentRecord,
    actors: Actors,
    relayer: RunningRelayer,
    narrator: &mut N,
) -> Result<Report> {
    run_with(client, record, actors, Some(relayer), narrator).await
}

async fn run_with<N: Narrator>(
    client: &Client,
    record: &DeploymentRecord,
    actors: Actors,
    running: Option<RunningRelayer>,
    narrator: &mut N,
) -> Result<Report> {
    let contracts = Contracts::from_record(record)?;
    let db_file = std::env::temp_dir().join(format!(
        "bursar-demo-relayer-{}-{}.db",
        std::process::id(),
        actors.relayer.address()
    ));
    let relayer_signers = match &running {
        Some(r) if !r.signers.is_empty() => r.signers.clone(),
        _ => vec![actors.relayer.address()],
    };
    let mut s = Scenario::new(client, contracts, actors, relayer_signers, narrator);
    if running.is_some() {
        s.clock = StoryClock::SHARED_CHAIN;
    }
    s.report.first_block = client.block_number().await? + 1;
    s.fund_actors().await?;
    s.host = Some(match running {
        None => {
            let key = s.actors.relayer.clone();
            crate::host::start(client.url(), record, &db_file, key).await?
        }
        Some(r) => crate::host::connect(r.url, r.host_key).await?,
    });
    let story = async {
        s.vendor_list().await?;
        s.fund_owner().await?;
        s.passports().await?;
        s.open_session().await?;
        s.pay_within_policy().await?;
        s.refusals().await?;
        s.refill().await?;
        s.heartbeat().await?;
        s.co_signed_payment().await?;
        s.acknowledge().await?;
        s.sale().await?;
        s.provenance().await?;
        s.ratings().await?;
        s.revoke_and_close().await?;
        s.host_webhooks().await
    };
    let outcome = story.await;
    if let Some(host) = s.host.take() {
        host.close().await;
    }
    let _ = std::fs::remove_file(&db_file);
    outcome.map(|()| s.report)
}

/// A session opened on a running stack to try things with (`bursar pay`, `bursar fetch`, an
/// MCP client, an SDK): the story's funding, vendor allowlist and terms, left open.
#[derive(Clone, Debug)]
pub struct Trial {
    /// The session (0x and 64 hex digits).
    pub session_id: String,
    /// The sandbox's capability token.
    pub capability_token: String,
    /// The deposit's token (the chain's USDC).
    pub token: Address,
    /// Vendor A (`model-api`, at most 25.00 per payment) and vendor B (`gpu-cloud`): on the
    /// allowlist.
    pub allowed: [Address; 2],
    /// Vendor C: not on it.
    pub not_allowed: Address,
}

/// Opens a [`Trial`] session through `relayer`, its host, the way the story opens its own.
pub async fn open_trial(
    client: &Client,
    record: &DeploymentRecord,
    actors: Actors,
    relayer: RunningRelayer,
) -> Result<Trial> {
    let mut quiet = Transcript::default();
    let contracts = Contracts::from_record(record)?;
    let mut s = Scenario::new(client, contracts, actors, relayer.signers, &mut quiet);
    s.fund_actors().await?;
    s.host = Some(crate::host::connect(relayer.url, relayer.host_key).await?);
    let opened = async {
        s.vendor_list().await?;
        s.fund_owner().await?;
        s.open_session().await
    }
    .await;
    if let Some(host) = s.host.take() {
        host.close().await;
    }
    opened?;
    Ok(Trial {
        session_id: s.session_path(),
        capability_token: s.token,
        token: s.contracts.token,
        allowed: [s.actors.vendor_a.address(), s.actors.vendor_b.address()],
        not_allowed: s.actors.vendor_c.address(),
    })
}

/// A session prepared on a running stack for an owner's own wallet to approve on the relayer's
/// approval page: the story's vendor allowlist and terms, the owner funded with the deposit.
#[derive(Clone, Debug)]
pub struct PreparedTrial {
    /// The session it will be (0x and 64 hex digits).
    pub session_id: String,
    /// Names it in `POST /v1/sessions/register` once the owner opened it.
    pub prepared_id: String,
    /// The owner's approval page.
    pub approval_url: String,
    /// The deposit's token (the chain's USDC).
    pub token: Address,
    /// The two allowlisted vendors.
    pub allowed: [Address; 2],
    /// A vendor not on the list.
    pub not_allowed: Address,
}

/// Prepares a [`PreparedTrial`] for `owner` through `relayer`, its host; `owner` gets the
/// deposit (its wallet signs; it needs no gas).
pub async fn prepare_trial(
    client: &Client,
    record: &DeploymentRecord,
    actors: Actors,
    relayer: RunningRelayer,
    owner: Address,
) -> Result<PreparedTrial> {
    let mut quiet = Transcript::default();
    let contracts = Contracts::from_record(record)?;
    let mut s = Scenario::new(client, contracts, actors, relayer.signers, &mut quiet);
    s.fund_actors().await?;
    s.host = Some(crate::host::connect(relayer.url, relayer.host_key).await?);
    let prepared = async {
        s.vendor_list().await?;
        s.mint_deposit(owner).await?;
        s.prepare(owner, None, usd(DEPOSIT), "sbx_7f3a").await
    }
    .await;
    if let Some(host) = s.host.take() {
        host.close().await;
    }
    let prepared = prepared?;
    Ok(PreparedTrial {
        session_id: text(&prepared["sessionId"])?,
        prepared_id: text(&prepared["preparedId"])?,
        approval_url: text(&prepared["approvalUrl"])?,
        token: s.contracts.token,
        allowed: [s.actors.vendor_a.address(), s.actors.vendor_b.address()],
        not_allowed: s.actors.vendor_c.address(),
    })
}

impl<'a, N: Narrator> Scenario<'a, N> {
    fn new(
        client: &'a Client,
        contracts: Contracts,
        actors: Actors,
        relayer_signers: Vec<Address>,
        narrator: &'a mut N,
    ) -> Self {
        Scenario {
            client,
            contracts,
            actors,
            relayer_signer: relayer_signers.first().copied().unwrap_or_default(),
            relayer_signers,
            narrator,
            senders: Vec::new(),
            report: Report::default(),
            receipts: Vec::new(),
            payment_ids: Vec::new(),
            purchase: None,
            host: None,
            token: String::new(),
            clock: StoryClock::OWN_CHAIN,
            session_key: Address::ZERO,
            escrow_before: U256::ZERO,
        }
    }

    // ---- steps -------------------------------------------------------------------------------

    async fn fund_actors(&mut self) -> Result<()> {
        self.narrator
            .step("The operator gives gas money to the org, a vendor and the relayer's signer");
        let operator = self.actors.operator.clone();
        let client = self.client;
        let a = &self.actors;
        // The owner and the sandbox never pay gas: the relayer sends their signed messages.
        let payees = [a.org.address(), self.relayer_signer, a.vendor_a.address()];
        for to in payees {
            let sender = self.sender(&operator).await?;
            let r = sender
                .send(client, Some(to), vec![], U256::from(GAS_MONEY_WEI))
                .await
                .map_err(|source| ScenarioError::Send {
                    step: "fund",
                    source,
                })?;
            self.report.transactions.push(r.transaction_hash);
        }
        let a = &self.actors;
        self.narrator.note(&format!(
            "org {}, relayer signer {}; the owner {} holds no ETH at all",
            a.org.address(),
            self.relayer_signer,
            a.owner.address(),
        ));
        Ok(())
    }

    async fn vendor_list(&mut self) -> Result<()> {
        self.narrator
            .step("The org's finance admin creates a vendor allowlist");
        let org = self.actors.org.clone();
        let r = self
            .send(
                &org,
                self.contracts.counterparties,
                "createList",
                ICounterpartyRegistry::createListCall {},
            )
            .await?;
        let created =
            self.event::<ICounterpartyRegistry::ListCreated>(&r, self.contracts.counterparties)?;
        self.report.list_id = created.listId;
        let (a, b) = (
            self.actors.vendor_a.address(),
            self.actors.vendor_b.address(),
        );
        let r = self
            .send(
                &org,
                self.contracts.counterparties,
                "setEntries",
                ICounterpartyRegistry::setEntriesCall {
                    listId: created.listId,
                    counterparties: vec![a, b],
                    allowed: vec![true, true],
                    maxPerPayment: vec![usd(25), U256::ZERO],
                    labels: vec![label("model-api"), label("gpu-cloud")],
                },
            )
            .await?;
        let entries =
            self.events::<ICounterpartyRegistry::EntrySet>(&r, self.contracts.counterparties);
        self.check(entries.len() == 2, "two EntrySet events")?;
        self.narrator.note(&format!(
            "list #{}: vendor A {a} (model-api, ≤ 25.00 per payment), vendor B {b} (gpu-cloud)",
            created.listId
        ));
        Ok(())
    }

    async fn fund_owner(&mut self) -> Result<()> {
        self.narrator.step("The owner holds 100.00 USDC");
        self.mint_deposit(self.actors.owner.address()).await
    }

    /// Mints the deposit to `owner`.
    async fn mint_deposit(&mut self, owner: Address) -> Result<()> {
        let operator = self.actors.operator.clone();
        let before = self
            .view(
                self.contracts.token,
                IFiatToken::balanceOfCall { account: owner },
            )
            .await?;
        let r = self
            .send(
                &operator,
                self.contracts.token,
                "mint",
                IFiatToken::mintCall {
                    to: owner,
                    amount: usd(DEPOSIT),
                },
            )
            .await?;
        let t = self.event::<IFiatToken::Transfer>(&r, self.contracts.token)?;
        self.check(
            t.to == owner && t.value == usd(DEPOSIT),
            "Transfer(mint) to the owner",
        )?;
        self.expect_balance("owner", owner, before + usd(DEPOSIT))
            .await
    }

    async fn open_session(&mut self) -> Result<()> {
        self.narrator.step(
            "The host prepares a session for its sandbox; the owner signs it and a permit in its own wallet (EIP-712); the relayer opens it",
        );
        self.escrow_before = self
            .view(
                self.contracts.token,
                IFiatToken::balanceOfCall {
                    account: self.contracts.wallet,
                },
            )
            .await?;
        let owner = self.actors.owner.clone();
        let agent = self.report.agents.map(|a| a.research);
        let opened = self
            .open_for(&owner, agent, usd(DEPOSIT), "sbx_7f3a")
            .await?;
        self.token = opened.token;
        self.session_key = opened.session_key;
        let e = opened.event;
        self.check(
            self.relayer_signers.contains(&e.leaseKeeper),
            "SessionOpened names a relayer signer as lease keeper",
        )?;
        self.relayer_signer = e.leaseKeeper;
        self.report.session_id = e.sessionId;
        self.narrator.note(&format!(
            "session {}: deposit 100.00, ≤ 30.00 per payment, 40.00 per {}, owner co-signs above 20.00, vendors of list #{}, {} lease",
            crate::audit::session_label(e.sessionId), span(self.clock.period), self.report.list_id, span(self.clock.lease)
        ));
        if let Some(agent) = agent {
            self.narrator.note(&format!(
                "it runs for the research agent #{agent}: the metadata the owner signed names it"
            ));
        }
        self.narrator.note(&format!(
            "the sandbox got a capability token; its key {} stays sealed in the relayer",
            self.session_key
        ));
        self.expect_balance("owner", owner.address(), U256::ZERO)
            .await?;
        self.expect_escrow(usd(DEPOSIT)).await
    }

    /// Opens a session of `owner` (for `agent`, if any) with `deposit` through the relayer:
    /// prepared by the host, the terms and a permit signed in the owner's wallet.
    async fn open_for(
        &mut self,
        owner: &Key,
        agent: Option<U256>,
        deposit: U256,
        sandbox: &str,
    ) -> Result<Opened> {
        let prepared = self
            .prepare(owner.address(), agent, deposit, sandbox)
            .await?;
        let (api, key) = self.api();
        let typed = &prepared["typedData"];
        let opened = self.expect(
            201,
            api.post(
                "/v1/sessions",
                &key,
                json!({
                    "preparedId": prepared["preparedId"],
                    "ownerSignature": crate::host::wallet_sign(owner, &typed["openSession"])?,
                    "permitSignature": crate::host::wallet_sign(owner, &typed["permit"])?,
                }),
            )
            .await?,
        )?;
        self.check(opened["status"] == "open", "the session is open")?;
        let token = text(&opened["capabilityToken"])?;
        let session_key: Address = text(&prepared["sessionKey"])?
            .parse()
            .map_err(|_| ScenarioError::Check("sessionKey is an address".into()))?;
        let r = self.mined(&opened["transactionHash"]).await?;
        let event = self.event::<ISessionWallet::SessionOpened>(&r, self.contracts.wallet)?;
        let metadata = agent
            .and_then(session_metadata)
            .unwrap_or_else(|| keccak256(SANDBOX_METADATA));
        self.check(
            event.owner == owner.address()
                && event.sessionKey == session_key
                && event.deposit == deposit
                && event.metadata == metadata,
            "SessionOpened names the owner, the custodial key, the deposit and the metadata",
        )?;
        let approval = self.events::<IFiatToken::Approval>(&r, self.contracts.token);
        self.check(approval.len() == 1, "the permit's Approval")?;
        Ok(Opened {
            token,
            session_key,
            event,
        })
    }

    /// The host prepares a session of `owner` (for `agent`, if any; otherwise its metadata is
    /// a note on the sandbox) with the story's terms and `deposit`: the relayer's answer.
    async fn prepare(
        &mut self,
        owner: Address,
        agent: Option<U256>,
        deposit: U256,
        sandbox: &str,
    ) -> Result<serde_json::Value> {
        let now = self.client.latest_block().await?.timestamp.to::<u64>();
        let mut terms = json!({
            "owner": owner,
            "token": self.contracts.token,
            "deposit": deposit.to_string(),
            "perPaymentCap": usd(PER_PAYMENT_CAP).to_string(),
            "periodBudget": usd(PERIOD_BUDGET).to_string(),
            "periodSeconds": self.clock.period,
            "coSignThreshold": usd(CO_SIGN_THRESHOLD).to_string(),
            "expiresAt": now + 86_400,
            "leaseSeconds": self.clock.lease,
            "allowlistId": self.report.list_id.to_string(),
            "provider": "e2b",
            "sandboxId": sandbox,
        });
        match agent {
            Some(agent) => terms["agentId"] = json!(agent.to_string()),
            None => terms["metadata"] = json!(SANDBOX_METADATA),
        }
        let (api, key) = self.api();
        self.expect(201, api.post("/v1/sessions/prepare", &key, terms).await?)
    }

    async fn heartbeat(&mut self) -> Result<()> {
        self.narrator
            .step("The sandbox heart-beats; past half its lease, the relayer renews it on chain");
        let path = format!("/v1/sessions/{}/heartbeat", self.session_path());
        let (api, token) = (self.api().0, self.token.clone());
        let beat = self.expect(200, api.post(&path, &token, json!({})).await?)?;
        let why = format!(
            "the lease ({}, a {} gone) is renewed",
            span(self.clock.lease),
            span(self.clock.period)
        );
        self.check(beat["renewalSubmitted"] == true, &why)?;
        self.narrator.note(&format!(
            "lease ran until {}; renewal sent by the relayer, the session's lease keeper",
            beat["leaseExpiresAt"]
        ));
        Ok(())
    }

    async fn pay_within_policy(&mut self) -> Result<()> {
        self.narrator.step("The agent pays two allowed vendors");
        let a = self.actors.vendor_a.address();
        let b = self.actors.vendor_b.address();
        let first = self.pay_ok(a, usd(12), "inference: 1.2M tokens").await?;
        let second = self.pay_ok(b, usd(15), "gpu: 2h A100").await?;
        self.report.receipt_ids.extend([first, second]);
        self.expect_balance("vendor A", a, usd(12)).await?;
        self.expect_balance("vendor B", b, usd(15)).await?;
        self.expect_escrow(usd(73)).await?;
        self.expect_view_period_left(usd(13)).await
    }

    async fn refusals(&mut self) -> Result<()> {
        self.narrator
            .step("The relayer refuses, by the contracts' own rules, what the policy forbids");
        let c = self.actors.vendor_c.address();
        match self.pay(c, usd(5), "unknown vendor").await? {
            Err(r) if r.code == "WalletCounterpartyNotAllowed"
                && r.details["counterparty"] == json!(c.to_checksum(None)) =>
            {
                self.narrator.note(&format!(
                    "refused ({}): 5.00 to vendor C {c} — not on list #{} (WalletCounterpartyNotAllowed)",
                    r.status, r.details["listId"].as_str().unwrap_or("?")
                ))
            }
            other => return Err(self.unexpected("WalletCounterpartyNotAllowed", other.map(|_| ()))),
        }
        let a = self.actors.vendor_a.address();
        match self.pay(a, usd(18), "inference: more tokens").await? {
            Err(r) if r.code == "WalletPeriodBudgetExceeded"
                && r.details["amount"] == usd(18).to_string()
                && r.details["available"] == usd(13).to_string() =>
            {
                self.narrator.note(&format!(
                    "refused (422): 18.00 to vendor A — only 13.00 left of this {}'s 40.00 (WalletPeriodBudgetExceeded)",
                    span(self.clock.period)
                ))
            }
            other => return Err(self.unexpected("WalletPeriodBudgetExceeded", other.map(|_| ()))),
        }
        self.expect_balance("vendor C", c, U256::ZERO).await?;
        self.expect_escrow(usd(73)).await
    }

    async fn refill(&mut self) -> Result<()> {
        if self.clock.warps {
            self.narrator
                .step("An hour passes; the period budget refills and the agent retries");
            // From the latest block's time, not the wall clock: quickly mined blocks run ahead.
            let now = self.client.latest_block().await?.timestamp.to::<u64>();
            let _: serde_json::Value = self
                .client
                .request(
                    "evm_setNextBlockTimestamp",
                    json!([now + self.clock.period]),
                )
                .await?;
            let _: serde_json::Value = self.client.request("evm_mine", json!([])).await?;
        } else {
            self.narrator.step(&format!(
                "A period passes ({} on a running stack, whose clock the story leaves alone); the budget refills and the agent retries",
                span(self.clock.period)
            ));
            self.period_refilled().await?;
        }
        self.expect_view_period_left(usd(PERIOD_BUDGET)).await?;
        let a = self.actors.vendor_a.address();
        let id = self.pay_ok(a, usd(18), "inference: more tokens").await?;
        self.report.receipt_ids.push(id);
        self.expect_balance("vendor A", a, usd(30)).await?;
        self.expect_view_period_left(usd(22)).await
    }

    async fn co_signed_payment(&mut self) -> Result<()> {
        self.narrator
            .step("A payment above the co-sign threshold waits for the owner, who approves it in its wallet");
        let b = self.actors.vendor_b.address();
        let (payment, pending_id) = match self.pay(b, usd(21), "gpu: fine-tuning run").await? {
            Ok((r, false, id, payment)) => {
                let p = self.event::<ISessionWallet::PaymentPending>(&r, self.contracts.wallet)?;
                self.check(
                    p.pendingId == id && p.amount == usd(21),
                    "PaymentPending(21.00)",
                )?;
                (payment, id)
            }
            other => return Err(self.unexpected("a pending payment", other.map(|_| ()))),
        };
        self.report.pending_id = pending_id;
        self.narrator.note(&format!(
            "pending #{pending_id}: 21.00 to vendor B reserved; nothing paid yet"
        ));
        self.expect_balance("vendor B", b, usd(15)).await?;
        let owner = self.actors.owner.clone();
        let (api, key) = self.api();
        let path = format!(
            "/v1/sessions/{}/pending/{pending_id}/decision",
            self.session_path()
        );
        let to_sign = self.expect(200, api.get(&format!("{path}?approve=true"), &key).await?)?;
        let decision = json!({
            "approve": true,
            "nonce": to_sign["nonce"],
            "deadline": to_sign["deadline"],
            "signature": crate::host::wallet_sign(&owner, &to_sign["typedData"])?,
        });
        self.expect(202, api.post(&path, &key, decision).await?)?;
        let id = text(&payment["id"])?;
        let settled = self
            .payment(&id, "confirmed,rejected,failed,expired")
            .await?;
        self.check(
            settled["status"] == "confirmed",
            "the approved payment is confirmed",
        )?;
        let receipt_id: U256 = text(&settled["receiptId"])?
            .parse()
            .map_err(|_| ScenarioError::Check("receiptId".into()))?;
        let approved = self
            .logs_since::<ISessionWallet::PaymentApproved>(self.contracts.wallet)
            .await?;
        self.check(
            approved
                .iter()
                .any(|e| e.pendingId == pending_id && e.by == owner.address()),
            "PaymentApproved by the owner (through the gateway, gasless)",
        )?;
        self.report.receipt_ids.push(receipt_id);
        self.narrator.note(&format!(
            "the owner approved: 21.00 paid to vendor B, receipt #{receipt_id}"
        ));
        self.expect_balance("vendor B", b, usd(36)).await?;
        self.expect_escrow(usd(34)).await
    }

    async fn acknowledge(&mut self) -> Result<()> {
        self.narrator
            .step("Vendor A acknowledges its first receipt with a hash of what it delivered");
        let receipt_id = self.report.receipt_ids[0];
        let vendor = self.actors.vendor_a.clone();
        let response = keccak256("response: completion batch 0x51");
        let quoted = self.receipts[0].clone();
        let verified = self
            .view(
                self.contracts.receipts,
                IReceiptRegistry::verifyReceiptCall {
                    receiptId: receipt_id,
                    sessionId: quoted.sessionId,
                    payer: quoted.payer,
                    payee: quoted.payee,
                    token: quoted.token,
                    amount: quoted.amount,
                    purpose: quoted.purpose,
                    timestamp: quoted.timestamp,
                },
            )
            .await?;
        self.check(
            verified,
            "verifyReceipt: the announced receipt matches its commitment",
        )?;
        let r = self
            .send(
                &vendor,
                self.contracts.receipts,
                "acknowledge",
                IReceiptRegistry::acknowledgeCall {
                    receiptId: receipt_id,
                    sessionId: quoted.sessionId,
                    payer: quoted.payer,
                    token: quoted.token,
                    amount: quoted.amount,
                    purpose: quoted.purpose,
                    timestamp: quoted.timestamp,
                    responseHash: response,
                },
            )
            .await?;
        let ack =
            self.event::<IReceiptRegistry::ReceiptAcknowledged>(&r, self.contracts.receipts)?;
        self.check(
            ack.receiptId == receipt_id && ack.responseHash == response,
            "ReceiptAcknowledged",
        )?;
        self.narrator.note(&format!(
            "receipt #{receipt_id} acknowledged: response {response}"
        ));
        Ok(())
    }

    async fn provenance(&mut self) -> Result<()> {
        self.narrator.step(
            "The research agent records provenance: its report, derived from the dataset it bought",
        );
        let dataset = self.report.provenance_ids[0];
        let who = (self.token.clone(), self.session_key);
        let purchase = self
            .purchase
            .clone()
            .ok_or_else(|| ScenarioError::Check("nothing was bought".into()))?;
        let report = self
            .record_provenance(
                &who,
                "report.pdf",
                "s3://bursar-demo/report.pdf",
                vec![dataset],
                Some(&purchase),
            )
            .await?;
        let parents = self
            .view(
                self.contracts.receipts,
                IReceiptRegistry::provenanceParentsCall { recordId: report },
            )
            .await?;
        self.check(
            parents == vec![dataset],
            "the report's parent is the dataset",
        )?;
        self.report.provenance_ids.push(report);
        Ok(())
    }

    async fn revoke_and_close(&mut self) -> Result<()> {
        self.narrator.step(
            "The host revokes the session (the relayer is its guardian) and closes it; the owner gets the rest back",
        );
        let sid = self.report.session_id;
        let (api, key) = self.api();
        let path = format!("/v1/sessions/{}", self.session_path());
        let revoked = self.expect(
            200,
            api.post(&format!("{path}/revoke"), &key, json!({})).await?,
        )?;
        self.check(revoked["onChain"] == "revoked", "revoked on chain")?;
        let r = self.mined(&revoked["transactionHash"]).await?;
        let e = self.event::<ISessionWallet::SessionRevoked>(&r, self.contracts.wallet)?;
        self.check(
            e.sessionId == sid && e.by == self.relayer_signer,
            "SessionRevoked by the relayer, the session's guardian",
        )?;
        match self.pay(self.actors.vendor_a.address(), usd(1), "after revoke").await? {
            Err(refusal) if refusal.status == 401 => self.narrator.note(
                "the sandbox's next payment is refused: its capability token died with the session (401; on chain: WalletSessionRevoked)",
            ),
            other => return Err(self.unexpected("401 after revocation", other.map(|_| ()))),
        }
        let closed = self.expect(
            202,
            api.post(&format!("{path}/close"), &key, json!({})).await?,
        )?;
        self.check(closed["status"] == "closed", "closed on chain")?;
        let r = self.mined(&closed["transactionHash"]).await?;
        let closed = self.event::<ISessionWallet::SessionClosed>(&r, self.contracts.wallet)?;
        let (spent, refund) = (
            usd(66) + U256::from(DATASET_PRICE),
            usd(34) - U256::from(DATASET_PRICE),
        );
        self.check(
            closed.spent == spent && closed.refund == refund,
            "SessionClosed: spent 66.50, refund 33.50",
        )?;
        self.report.spent = closed.spent;
        self.report.refund = closed.refund;
        self.narrator
            .note("closed: 66.50 spent, 33.50 refunded to the owner");
        let owner = self.actors.owner.address();
        self.expect_balance("owner", owner, refund).await?;
        self.expect_escrow(U256::ZERO).await
    }

    async fn host_webhooks(&mut self) -> Result<()> {
        self.narrator
            .step("The host's webhook receiver got, verified and kept every change");
        let got = self
            .host()?
            .webhooks_until(std::time::Duration::from_secs(30), |got| {
                got.iter().any(|w| w["type"] == "session.closed")
            })
            .await
            .ok_or_else(|| ScenarioError::Check("no session.closed webhook within 30 s".into()))?;
        for w in &got {
            let d = &w["data"];
            let what = match w["type"].as_str().unwrap_or_default() {
                "payment.updated" => format!(
                    "{} {} to {}",
                    d["status"].as_str().unwrap_or_default(),
                    crate::money::format_usd(
                        d["amount"]
                            .as_str()
                            .and_then(|a| a.parse().ok())
                            .unwrap_or_default()
                    ),
                    d["to"].as_str().unwrap_or_default()
                ),
                "session.closed" => format!(
                    "refund {}",
                    crate::money::format_usd(
                        d["refund"]
                            .as_str()
                            .and_then(|a| a.parse().ok())
                            .unwrap_or_default()
                    )
                ),
                "provenance.updated" => {
                    format!("record #{}", d["recordId"].as_str().unwrap_or("?"))
                }
                _ => String::new(),
            };
            self.narrator.note(&format!(
                "webhook {:<19} {what}",
                w["type"].as_str().unwrap_or("?")
            ));
        }
        self.check(got.len() >= 9, "a webhook for every change")
    }

    // ---- helpers -----------------------------------------------------------------------------

    /// The sandbox asks the relayer to pay (`POST /v1/payments` with its capability token) and
    /// waits for the outcome: `Ok(Ok((receipt, paid, id, payment)))` when mined (`id`: the
    /// receipt id, or the pending id when it waits for the owner), `Ok(Err(refusal))` when the
    /// relayer refuses it (the contracts' rule, by name, before anything is sent).
    async fn pay(
        &mut self,
        to: Address,
        amount: U256,
        purpose: &str,
    ) -> Result<Result<(Receipt, bool, U256, serde_json::Value), Refusal>> {
        let body = json!({
            "to": to,
            "amount": amount.to_string(),
            "purpose": label(purpose).to_string(),
        });
        let (api, token) = (self.api().0, self.token.clone());
        let (status, answer) = api.post("/v1/payments", &token, body).await?;
        if status != 202 {
            return Ok(Err(Refusal {
                status,
                code: answer["code"].as_str().unwrap_or_default().to_owned(),
                details: answer["details"].clone(),
            }));
        }
        let id = text(&answer["id"])?;
        let settled = self
            .payment(&id, "confirmed,pending_approval,rejected,failed,expired")
            .await?;
        let paid = match settled["status"].as_str() {
            Some("confirmed") => true,
            Some("pending_approval") => false,
            _ => {
                return Err(ScenarioError::Check(format!(
                    "payment {id} did not settle: {settled}"
                )))
            }
        };
        let r = self.mined(&settled["transactionHash"]).await?;
        let number = if paid {
            &settled["receiptId"]
        } else {
            &settled["pendingId"]
        };
        let number: U256 = text(number)?
            .parse()
            .map_err(|_| ScenarioError::Check(format!("payment {id}: {settled}")))?;
        Ok(Ok((r, paid, number, settled)))
    }

    /// Payment `id` once its status is one of `until` (the relayer answers when it is).
    async fn payment(&mut self, id: &str, until: &str) -> Result<serde_json::Value> {
        let (api, token) = (self.api().0, self.token.clone());
        let path = format!("/v1/payments/{id}?wait=30&until={until}");
        self.expect(200, api.get(&path, &token).await?)
    }

    /// [`Self::pay`] that must be executed at once; narrates and returns the receipt id.
    async fn pay_ok(&mut self, to: Address, amount: U256, purpose: &str) -> Result<U256> {
        match self.pay(to, amount, purpose).await? {
            Ok((r, true, receipt_id, settled)) => {
                let e = self.event::<ISessionWallet::PaymentExecuted>(&r, self.contracts.wallet)?;
                let rec =
                    self.event::<IReceiptRegistry::ReceiptRecorded>(&r, self.contracts.receipts)?;
                self.check(
                    e.to == to
                        && e.amount == amount
                        && rec.receiptId == receipt_id
                        && rec.payee == to,
                    "PaymentExecuted and ReceiptRecorded match the intent",
                )?;
                self.receipts.push(PaymentReceipt::from(&rec));
                self.payment_ids.push(text(&settled["id"])?);
                let moved = self.events::<IFiatToken::Transfer>(&r, self.contracts.token);
                self.check(
                    moved.len() == 1
                        && moved[0].from == self.contracts.wallet
                        && moved[0].to == to
                        && moved[0].value == amount,
                    "one token Transfer from the escrow to the vendor",
                )?;
                self.narrator.note(&format!(
                    "paid {} to {to} for {purpose:?}: receipt #{receipt_id} (block {})",
                    crate::money::format_usd(amount),
                    r.block()
                ));
                Ok(receipt_id)
            }
            other => Err(self.unexpected("an executed payment", other.map(|_| ()))),
        }
    }

    /// The sandbox of `who` (capability token, session key) records provenance.
    async fn record_provenance(
        &mut self,
        (token, session_key): &(String, Address),
        name: &str,
        uri: &str,
        parents: Vec<U256>,
        purchase: Option<&Purchase>,
    ) -> Result<U256> {
        let mut body = json!({
            "artifact": name,
            "inputs": format!("inputs of {name}"),
            "runtime": "image sha256:4be1… python 3.12",
            "policy": "policy v1",
            "uri": uri,
            "parents": parents.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
        });
        // Made from what it bought: the record's inputs name the purchase's receipt.
        let inputs = match purchase {
            Some(p) => {
                body["purchase"] = json!(p.payment_id);
                body.as_object_mut().map(|b| b.remove("inputs"));
                receipt_commitment(&p.receipt)
            }
            None => keccak256(format!("inputs of {name}")),
        };
        let api = self.api().0;
        let queued = self.expect(202, api.post("/v1/provenance", token, body).await?)?;
        let path = format!("/v1/provenance/{}?wait=30", text(&queued["id"])?);
        let recorded = self.expect(200, api.get(&path, token).await?)?;
        self.check(recorded["status"] == "recorded", "the record is on chain")?;
        let r = self.mined(&recorded["transactionHash"]).await?;
        let e = self.event::<IReceiptRegistry::ProvenanceRecorded>(&r, self.contracts.receipts)?;
        self.check(
            e.attester == *session_key
                && e.parents == parents
                && e.subject == keccak256(name)
                && e.inputs == inputs,
            "ProvenanceRecorded with the session key as attester",
        )?;
        let valid = self
            .view(
                self.contracts.receipts,
                IReceiptRegistry::isValidCall {
                    recordId: e.recordId,
                },
            )
            .await?;
        self.check(valid, "the record is valid")?;
        self.narrator.note(&format!(
            "record #{}: {name} attested by the session key{}{}",
            e.recordId,
            if parents.is_empty() {
                String::new()
            } else {
                format!(", derived from #{}", parents[0])
            },
            purchase.map_or(String::new(), |p| format!(
                ", bought with receipt #{} (its inputs: the receipt's commitment)",
                p.receipt_id
            )),
        ));
        Ok(e.recordId)
    }

    fn host(&self) -> Result<&crate::host::Host> {
        self.host
            .as_ref()
            .ok_or_else(|| ScenarioError::Check("the relayer is not running".into()))
    }

    /// The relayer's API and the host's key.
    fn api(&self) -> (crate::host::Api, String) {
        let host = self
            .host
            .as_ref()
            .expect("the relayer runs for the whole story");
        (host.api.clone(), host.key.clone())
    }

    /// The session's id as the API's paths take it.
    fn session_path(&self) -> String {
        bursar_client::ids::session_id_text(self.report.session_id)
    }

    /// `answer`'s body when its status is `want`; a check failure naming both otherwise.
    fn expect(
        &self,
        want: u16,
        (status, body): (u16, serde_json::Value),
    ) -> Result<serde_json::Value> {
        if status == want {
            Ok(body)
        } else {
            Err(ScenarioError::Check(format!(
                "the relayer answered {status} (wanted {want}): {body}"
            )))
        }
    }

    /// The receipt of the relayer's transaction `hash` (recorded in the report).
    async fn mined(&mut self, hash: &serde_json::Value) -> Result<Receipt> {
        let hash: B256 = text(hash)?
            .parse()
            .map_err(|_| ScenarioError::Check(format!("not a transaction hash: {hash}")))?;
        let r = self
            .client
            .receipt(hash)
            .await?
            .ok_or_else(|| ScenarioError::Check(format!("no receipt for {hash}")))?;
        self.report.transactions.push(hash);
        Ok(r)
    }

    /// The `E` events `address` logged since the story began.
    async fn logs_since<E: SolEvent>(&self, address: Address) -> Result<Vec<E>> {
        let logs = self
            .client
            .logs(&[address], self.report.first_block, None)
            .await?;
        Ok(decode_events(&logs, address))
    }

    async fn sender(&mut self, key: &Key) -> Result<&mut Sender> {
        let address = key.address();
        if !self.senders.iter().any(|(a, _)| *a == address) {
            let sender = Sender::new(self.client, key.clone()).await?;
            self.senders.push((address, sender));
        }
        Ok(self
            .senders
            .iter_mut()
            .find(|(a, _)| *a == address)
            .map(|(_, s)| s)
            .expect("inserted above"))
    }

    async fn send<C: SolCall>(
        &mut self,
        from: &Key,
        to: Address,
        step: &'static str,
        call: C,
    ) -> Result<Receipt> {
        let client = self.client;
        let sender = self.sender(from).await?;
        let r = sender
            .transact(client, to, &call)
            .await
            .map_err(|source| ScenarioError::Send { step, source })?;
        self.report.transactions.push(r.transaction_hash);
        Ok(r)
    }

    async fn view<C: SolCall>(&self, to: Address, call: C) -> Result<C::Return> {
        let out = self
            .client
            .call(None, to, &call.abi_encode(), U256::ZERO, None)
            .await?;
        C::abi_decode_returns(&out)
            .map_err(|e| ScenarioError::Check(format!("{} returned garbage: {e}", C::SIGNATURE)))
    }

    fn events<E: SolEvent>(&self, r: &Receipt, address: Address) -> Vec<E> {
        decode_events(&r.logs, address)
    }

    /// The one `E` event `address` logged in `r`.
    fn event<E: SolEvent>(&self, r: &Receipt, address: Address) -> Result<E> {
        let mut all = self.events::<E>(r, address);
        match all.len() {
            1 => Ok(all.remove(0)),
            n => Err(ScenarioError::Check(format!(
                "expected one {} in {}, found {n}",
                E::SIGNATURE,
                r.transaction_hash
            ))),
        }
    }

    fn check(&self, ok: bool, what: &str) -> Result<()> {
        if ok {
            Ok(())
        } else {
            Err(ScenarioError::Check(what.to_string()))
        }
    }

    fn unexpected<T: std::fmt::Debug>(&self, wanted: &str, got: T) -> ScenarioError {
        ScenarioError::Check(format!("expected {wanted}, got {got:?}"))
    }

    /// The wallet holds `want` of this session's, beside what it held before.
    async fn expect_escrow(&mut self, want: U256) -> Result<()> {
        let want = self.escrow_before + want;
        self.expect_balance("wallet escrow", self.contracts.wallet, want)
            .await
    }

    async fn expect_balance(&mut self, who: &str, address: Address, want: U256) -> Result<()> {
        let have = self
            .view(
                self.contracts.token,
                IFiatToken::balanceOfCall { account: address },
            )
            .await?;
        if have != want {
            return Err(ScenarioError::Check(format!(
                "{who} {address} holds {}, expected {}",
                crate::money::format_usd(have),
                crate::money::format_usd(want)
            )));
        }
        self.narrator.note(&format!(
            "  balance: {who:<14} {:>10}",
            crate::money::format_usd(have)
        ));
        Ok(())
    }

    /// Waits, on the wall clock, until the session's period budget is whole again (a call at
    /// the head runs in the next block's time, which follows the wall clock).
    async fn period_refilled(&mut self) -> Result<()> {
        let whole = usd(PERIOD_BUDGET);
        let deadline =
            tokio::time::Instant::now() + std::time::Duration::from_secs(self.clock.period + 30);
        loop {
            let call = ISessionWallet::remainingPeriodBudgetCall {
                sessionId: self.report.session_id,
            };
            if self.view(self.contracts.wallet, call).await? == whole {
                return Ok(());
            }
            if tokio::time::Instant::now() > deadline {
                return Err(ScenarioError::Check(
                    "the period budget did not refill".into(),
                ));
            }
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        }
    }

    async fn expect_view_period_left(&mut self, want: U256) -> Result<()> {
        let left = self
            .view(
                self.contracts.wallet,
                ISessionWallet::remainingPeriodBudgetCall {
                    sessionId: self.report.session_id,
                },
            )
            .await?;
        if left != want {
            return Err(ScenarioError::Check(format!(
                "period budget left {}, expected {}",
                crate::money::format_usd(left),
                crate::money::format_usd(want)
            )));
        }
        self.narrator.note(&format!(
            "  period budget left: {}",
            crate::money::format_usd(left)
        ));
        Ok(())
    }
}

/// A payment the relayer refused before sending anything: the HTTP status, and the contract
/// rule's name and arguments.
#[derive(Debug)]
pub struct Refusal {
    /// 422 for a contract rule, 401 for a dead capability token…
    pub status: u16,
    /// The error's name (`WalletPeriodBudgetExceeded`).
    pub code: String,
    /// Its arguments.
    pub details: serde_json::Value,
}

fn text(v: &serde_json::Value) -> Result<String> {
    v.as_str()
        .map(str::to_owned)
        .ok_or_else(|| ScenarioError::Check(format!("expected a string, got {v}")))
}

/// A short text as a `bytes32` (labels, purposes): UTF-8, zero-padded, cut at 32 bytes.
pub fn label(text: &str) -> B256 {
    let mut out = [0u8; 32];
    let n = text.len().min(32);
    out[..n].copy_from_slice(&text.as_bytes()[..n]);
    B256::from(out)
}

/// The `E` events `address` logged.
pub fn decode_events<E: SolEvent>(logs: &[RpcLog], address: Address) -> Vec<E> {
    logs.iter()
        .filter(|l| l.address == address)
        .filter_map(|l| E::decode_raw_log(l.topics.iter().copied(), &l.data).ok())
        .collect()
}
