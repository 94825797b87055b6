//! The agent-session scenario: an org's vendor list, a session opened with a permit, an agent
//! paying within (and against) its policy, a co-signed payment, a receipt acknowledged,
//! provenance with lineage, revocation by the guardian and the owner's refund.
//!
//! Every step checks what the chain did — the events in the receipt and every token balance —
//! and fails with [`ScenarioError::Check`] when anything differs, so the demonstration is also
//! a test.

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use alloy_sol_types::{SolCall, SolEvent, SolInterface, SolStruct};
use bursar_bindings::counterparty::ICounterpartyRegistry;
use bursar_bindings::eip712::{
    OpenSession, PaymentIntent, ProvenanceRecord, RECEIPT_REGISTRY_DOMAIN,
};
use bursar_bindings::receipts::{IReceiptRegistry, Receipt as PaymentReceipt};
use bursar_bindings::token::ITestToken;
use bursar_bindings::wallet::ISessionWallet::{self, ISessionWalletErrors};
use bursar_client::rpc::{Client, Receipt, RpcError, RpcLog};
use bursar_client::sender::SendError;
use bursar_client::sign::{signed_open_with_permit, signed_pay};
use bursar_client::{Key, Sender};
use bursar_deploy::{Contract, DeploymentRecord};
use serde_json::json;

use crate::money::usd;

/// Why the scenario stopped.
/// Why the scenario stopped.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The chain could not be reached or answered wrongly.
    #[error(transparent)]
    Rpc(#[from] RpcError),
    /// A transaction of step `step` could not be sent or was refused.
    #[error("{step}: {source}")]
    Send {
        /// What the scenario was doing.
        step: &'static str,
        /// Why the send failed.
        #[source]
        source: SendError,
    },
    /// The chain did something other than what the scenario expects.
    #[error("check failed: {0}")]
    Check(String),
    /// The deployment record lacks a contract the scenario needs.
    #[error("the deployment record has no {0}")]
    Missing(&'static str),
}

type Result<T, E = ScenarioError> = std::result::Result<T, E>;

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
    /// Submits signed intents and pays gas (a relayer, later).
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

/// The session's deposit, in whole tUSD.
pub const DEPOSIT: u64 = 100;
/// The largest single payment, in whole tUSD.
pub const PER_PAYMENT_CAP: u64 = 30;
/// What may be spent per period, in whole tUSD.
pub const PERIOD_BUDGET: u64 = 40;
/// The budget period.
pub const PERIOD_SECONDS: u64 = 3_600;
/// Payments above this (whole tUSD) wait for the owner.
pub const CO_SIGN_THRESHOLD: u64 = 20;

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
}

/// The deployed contracts the scenario uses.
#[derive(Clone, Copy, Debug)]
pub struct Contracts {
    /// The test token deposits are made in.
    pub token: Address,
    /// The CounterpartyRegistry.
    pub counterparties: Address,
    /// The ReceiptRegistry.
    pub receipts: Address,
    /// The SessionGateway.
    pub gateway: Address,
    /// The SessionWallet.
    pub wallet: Address,
}

impl Contracts {
    /// The addresses in a deployment record (`ScenarioError::Missing` for an absent one).
    pub fn from_record(record: &DeploymentRecord) -> Result<Self> {
        let get = |c: Contract| {
            record
                .address(c.key())
                .ok_or(ScenarioError::Missing(c.key()))
        };
        Ok(Contracts {
            token: get(Contract::TestToken)?,
            counterparties: get(Contract::CounterpartyRegistry)?,
            receipts: get(Contract::ReceiptRegistry)?,
            gateway: get(Contract::SessionGateway)?,
            wallet: get(Contract::SessionWallet)?,
        })
    }

    /// All five, for log queries.
    pub fn all(&self) -> [Address; 5] {
        [
            self.token,
            self.counterparties,
            self.receipts,
            self.gateway,
            self.wallet,
        ]
    }
}

/// The scenario's state while it runs.
pub struct Scenario<'a, N: Narrator> {
    client: &'a Client,
    chain_id: u64,
    /// The contracts it runs against.
    pub contracts: Contracts,
    actors: Actors,
    narrator: &'a mut N,
    senders: Vec<(Address, Sender)>,
    report: Report,
    /// Nonces for the agent's payment intents (the wallet accepts any unused one).
    next_nonce: u64,
    /// The receipts of executed payments, as `ReceiptRecorded` announced them (the registry
    /// keeps only their commitments; a payee restates its receipt to acknowledge it).
    receipts: Vec<PaymentReceipt>,
}

/// Runs the whole story on a dev chain (it moves time forward with `evm_increaseTime`).
pub async fn run<N: Narrator>(
    client: &Client,
    record: &DeploymentRecord,
    actors: Actors,
    narrator: &mut N,
) -> Result<Report> {
    let contracts = Contracts::from_record(record)?;
    let mut s = Scenario {
        client,
        chain_id: record.chain_id,
        contracts,
        actors,
        narrator,
        senders: Vec::new(),
        report: Report::default(),
        next_nonce: 1,
        receipts: Vec::new(),
    };
    s.report.first_block = client.block_number().await? + 1;
    s.fund_actors().await?;
    s.vendor_list().await?;
    s.fund_owner().await?;
    s.open_session().await?;
    s.pay_within_policy().await?;
    s.refusals().await?;
    s.refill().await?;
    s.co_signed_payment().await?;
    s.acknowledge().await?;
    s.provenance().await?;
    s.revoke_and_close().await?;
    Ok(s.report)
}

impl<N: Narrator> Scenario<'_, N> {
    // ---- steps -------------------------------------------------------------------------------

    async fn fund_actors(&mut self) -> Result<()> {
        self.narrator
            .step("The operator gives everyone who sends transactions gas money");
        let operator = self.actors.operator.clone();
        let client = self.client;
        let a = &self.actors;
        // The agent never pays gas: the relayer submits its signed intents.
        let payees = [
            a.org.address(),
            a.owner.address(),
            a.guardian.address(),
            a.relayer.address(),
            a.vendor_a.address(),
        ];
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
            "org {}, owner {}, agent key {} (no gas: it only signs), guardian {}, relayer {}",
            a.org.address(),
            a.owner.address(),
            a.agent.address(),
            a.guardian.address(),
            a.relayer.address()
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
        self.narrator.step("The owner holds 100.00 tUSD");
        let operator = self.actors.operator.clone();
        let owner = self.actors.owner.address();
        let r = self
            .send(
                &operator,
                self.contracts.token,
                "mint",
                ITestToken::mintCall {
                    to: owner,
                    value: usd(DEPOSIT),
                },
            )
            .await?;
        let t = self.event::<ITestToken::Transfer>(&r, self.contracts.token)?;
        self.check(
            t.to == owner && t.value == usd(DEPOSIT),
            "Transfer(mint) to the owner",
        )?;
        self.expect_balance("owner", owner, usd(DEPOSIT)).await
    }

    async fn open_session(&mut self) -> Result<()> {
        self.narrator.step(
            "The owner signs a session for the sandbox (EIP-712) and a permit for the deposit; the relayer submits both",
        );
        let now = self.client.latest_block().await?.timestamp.to::<u64>();
        let owner = self.actors.owner.clone();
        let deadline = U256::from(now + 600);
        let terms = OpenSession {
            owner: owner.address(),
            sessionKey: self.actors.agent.address(),
            guardian: self.actors.guardian.address(),
            token: self.contracts.token,
            deposit: usd(DEPOSIT),
            perPaymentCap: usd(PER_PAYMENT_CAP),
            periodBudget: usd(PERIOD_BUDGET),
            periodSeconds: PERIOD_SECONDS,
            coSignThreshold: usd(CO_SIGN_THRESHOLD),
            validAfter: 0,
            expiresAt: now + 86_400,
            leaseSeconds: 0,
            leaseKeeper: Address::ZERO,
            allowlistId: self.report.list_id,
            metadata: keccak256("sandbox e2b:sbx_7f3a (research agent)"),
            nonce: U256::from(1),
            deadline,
        };
        let call = signed_open_with_permit(
            &owner,
            self.chain_id,
            self.contracts.gateway,
            self.contracts.wallet,
            &terms,
            U256::ZERO,
        );
        let relayer = self.actors.relayer.clone();
        let r = self
            .send(&relayer, self.contracts.gateway, "openSessionWithSig", call)
            .await?;
        let opened = self.event::<ISessionWallet::SessionOpened>(&r, self.contracts.wallet)?;
        self.check(
            opened.owner == owner.address() && opened.sessionKey == self.actors.agent.address(),
            "SessionOpened names the owner and the agent's key",
        )?;
        let approval = self.events::<ITestToken::Approval>(&r, self.contracts.token);
        self.check(approval.len() == 1, "the permit's Approval")?;
        self.report.session_id = opened.sessionId;
        self.narrator.note(&format!(
            "session {}: deposit 100.00, ≤ 30.00 per payment, 40.00 per hour, owner co-signs above 20.00, vendors of list #{}",
            crate::audit::session_label(opened.sessionId), self.report.list_id
        ));
        self.expect_balance("owner", owner.address(), U256::ZERO)
            .await?;
        self.expect_balance("wallet escrow", self.contracts.wallet, usd(DEPOSIT))
            .await
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
        self.expect_balance("wallet escrow", self.contracts.wallet, usd(73))
            .await?;
        self.expect_view_period_left(usd(13)).await
    }

    async fn refusals(&mut self) -> Result<()> {
        self.narrator.step("The policy refuses what it must");
        let c = self.actors.vendor_c.address();
        match self.pay(c, usd(5), "unknown vendor").await? {
            Err(ISessionWalletErrors::WalletCounterpartyNotAllowed(e)) if e.counterparty == c => {
                self.narrator.note(&format!(
                    "refused: 5.00 to vendor C {c} — not on list #{} (WalletCounterpartyNotAllowed)",
                    e.listId
                ))
            }
            other => return Err(self.unexpected("WalletCounterpartyNotAllowed", other)),
        }
        let a = self.actors.vendor_a.address();
        match self.pay(a, usd(18), "inference: more tokens").await? {
            Err(ISessionWalletErrors::WalletPeriodBudgetExceeded(e))
                if e.amount == usd(18) && e.available == usd(13) =>
            {
                self.narrator.note(
                    "refused: 18.00 to vendor A — only 13.00 left of this hour's 40.00 (WalletPeriodBudgetExceeded)",
                )
            }
            other => return Err(self.unexpected("WalletPeriodBudgetExceeded", other)),
        }
        self.expect_balance("vendor C", c, U256::ZERO).await?;
        self.expect_balance("wallet escrow", self.contracts.wallet, usd(73))
            .await
    }

    async fn refill(&mut self) -> Result<()> {
        self.narrator
            .step("An hour passes; the period budget refills and the agent retries");
        // From the latest block's time, not the wall clock: quickly mined blocks run ahead.
        let now = self.client.latest_block().await?.timestamp.to::<u64>();
        let _: serde_json::Value = self
            .client
            .request("evm_setNextBlockTimestamp", json!([now + PERIOD_SECONDS]))
            .await?;
        let _: serde_json::Value = self.client.request("evm_mine", json!([])).await?;
        self.expect_view_period_left(usd(PERIOD_BUDGET)).await?;
        let a = self.actors.vendor_a.address();
        let id = self.pay_ok(a, usd(18), "inference: more tokens").await?;
        self.report.receipt_ids.push(id);
        self.expect_balance("vendor A", a, usd(30)).await?;
        self.expect_view_period_left(usd(22)).await
    }

    async fn co_signed_payment(&mut self) -> Result<()> {
        self.narrator
            .step("A payment above the co-sign threshold waits for the owner");
        let b = self.actors.vendor_b.address();
        let pending_id = match self.pay(b, usd(21), "gpu: fine-tuning run").await? {
            Ok((r, false, id)) => {
                let p = self.event::<ISessionWallet::PaymentPending>(&r, self.contracts.wallet)?;
                self.check(
                    p.pendingId == id && p.amount == usd(21),
                    "PaymentPending(21.00)",
                )?;
                id
            }
            other => return Err(self.unexpected("a pending payment", other.map(|_| ()))),
        };
        self.report.pending_id = pending_id;
        self.narrator.note(&format!(
            "pending #{pending_id}: 21.00 to vendor B reserved; nothing paid yet"
        ));
        self.expect_balance("vendor B", b, usd(15)).await?;
        let owner = self.actors.owner.clone();
        let r = self
            .send(
                &owner,
                self.contracts.wallet,
                "approvePending",
                ISessionWallet::approvePendingCall {
                    pendingId: pending_id,
                },
            )
            .await?;
        let approved = self.event::<ISessionWallet::PaymentApproved>(&r, self.contracts.wallet)?;
        self.check(
            approved.by == owner.address(),
            "PaymentApproved by the owner",
        )?;
        let paid = self.event::<ISessionWallet::PaymentExecuted>(&r, self.contracts.wallet)?;
        self.report.receipt_ids.push(paid.receiptId);
        self.narrator.note(&format!(
            "the owner approved: 21.00 paid to vendor B, receipt #{}",
            paid.receiptId
        ));
        self.expect_balance("vendor B", b, usd(36)).await?;
        self.expect_balance("wallet escrow", self.contracts.wallet, usd(34))
            .await
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
        self.narrator
            .step("The agent records provenance: a dataset, then a report derived from it");
        let dataset = self
            .record_provenance(
                "dataset.parquet",
                "s3://bursar-demo/dataset.parquet",
                vec![],
                1,
            )
            .await?;
        let report = self
            .record_provenance(
                "report.pdf",
                "s3://bursar-demo/report.pdf",
                vec![dataset],
                2,
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
        self.report.provenance_ids = vec![dataset, report];
        Ok(())
    }

    async fn revoke_and_close(&mut self) -> Result<()> {
        self.narrator
            .step("The guardian revokes the session; the owner closes it and gets the rest back");
        let sid = self.report.session_id;
        let guardian = self.actors.guardian.clone();
        let r = self
            .send(
                &guardian,
                self.contracts.wallet,
                "revoke",
                ISessionWallet::revokeCall { sessionId: sid },
            )
            .await?;
        let revoked = self.event::<ISessionWallet::SessionRevoked>(&r, self.contracts.wallet)?;
        self.check(
            revoked.by == guardian.address(),
            "SessionRevoked by the guardian",
        )?;
        match self
            .pay(self.actors.vendor_a.address(), usd(1), "after revoke")
            .await?
        {
            Err(ISessionWalletErrors::WalletSessionRevoked(_)) => self
                .narrator
                .note("the agent's next payment is refused: WalletSessionRevoked"),
            other => return Err(self.unexpected("WalletSessionRevoked", other)),
        }
        let owner = self.actors.owner.clone();
        let r = self
            .send(
                &owner,
                self.contracts.wallet,
                "close",
                ISessionWallet::closeCall { sessionId: sid },
            )
            .await?;
        let closed = self.event::<ISessionWallet::SessionClosed>(&r, self.contracts.wallet)?;
        self.check(
            closed.spent == usd(66) && closed.refund == usd(34),
            "SessionClosed: spent 66.00, refund 34.00",
        )?;
        self.report.spent = closed.spent;
        self.report.refund = closed.refund;
        self.narrator
            .note("closed: 66.00 spent, 34.00 refunded to the owner");
        self.expect_balance("owner", owner.address(), usd(34))
            .await?;
        self.expect_balance("wallet escrow", self.contracts.wallet, U256::ZERO)
            .await
    }

    // ---- helpers -----------------------------------------------------------------------------

    /// The agent signs a payment intent; the relayer submits it. `Ok(Ok((receipt, paid, id)))`
    /// when mined, `Ok(Err(error))` when the wallet refuses (decoded; nothing is sent).
    async fn pay(
        &mut self,
        to: Address,
        amount: U256,
        purpose: &str,
    ) -> Result<Result<(Receipt, bool, U256), ISessionWalletErrors>> {
        let nonce = U256::from(self.next_nonce);
        self.next_nonce += 1;
        let deadline = U256::from(self.client.latest_block().await?.timestamp.to::<u64>() + 300);
        let intent = PaymentIntent {
            session: self.report.session_id,
            to,
            amount,
            purpose: label(purpose),
            nonce,
            deadline,
        };
        let call = signed_pay(
            &self.actors.agent,
            self.chain_id,
            self.contracts.wallet,
            intent,
        );
        let relayer = self.actors.relayer.clone();
        let (client, wallet) = (self.client, self.contracts.wallet);
        let sender = self.sender(&relayer).await?;
        match sender.transact(client, wallet, &call).await {
            Ok(r) => {
                self.report.transactions.push(r.transaction_hash);
                let (paid, id) = match self
                    .events::<ISessionWallet::PaymentExecuted>(&r, self.contracts.wallet)
                    .first()
                {
                    Some(e) => (true, e.receiptId),
                    None => {
                        let p = self
                            .event::<ISessionWallet::PaymentPending>(&r, self.contracts.wallet)?;
                        (false, p.pendingId)
                    }
                };
                Ok(Ok((r, paid, id)))
            }
            Err(SendError::WouldRevert { data }) => match ISessionWalletErrors::abi_decode(&data) {
                Ok(e) => Ok(Err(e)),
                Err(_) => Err(ScenarioError::Check(format!(
                    "pay reverted with {}",
                    bursar_client::revert::describe(&data)
                ))),
            },
            Err(source) => Err(ScenarioError::Send {
                step: "pay",
                source,
            }),
        }
    }

    /// [`Self::pay`] that must be executed at once; narrates and returns the receipt id.
    async fn pay_ok(&mut self, to: Address, amount: U256, purpose: &str) -> Result<U256> {
        match self.pay(to, amount, purpose).await? {
            Ok((r, true, receipt_id)) => {
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
                let moved = self.events::<ITestToken::Transfer>(&r, self.contracts.token);
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

    async fn record_provenance(
        &mut self,
        name: &str,
        uri: &str,
        parents: Vec<U256>,
        nonce: u64,
    ) -> Result<U256> {
        let deadline = U256::from(self.client.latest_block().await?.timestamp.to::<u64>() + 300);
        let record = ProvenanceRecord {
            session: self.report.session_id,
            subject: keccak256(name),
            inputs: keccak256(format!("inputs of {name}")),
            runtime: keccak256("image sha256:4be1… python 3.12"),
            policy: keccak256("policy v1"),
            uri: keccak256(uri),
            parents: parents.clone(),
            nonce: U256::from(nonce),
            deadline,
        };
        let sig = self.actors.agent.sign_hash_rsv(&record.eip712_signing_hash(
            &RECEIPT_REGISTRY_DOMAIN.at(self.chain_id, self.contracts.receipts),
        ));
        let relayer = self.actors.relayer.clone();
        let r = self
            .send(
                &relayer,
                self.contracts.receipts,
                "recordProvenance",
                IReceiptRegistry::recordProvenanceCall {
                    sessionId: record.session,
                    subject: record.subject,
                    inputs: record.inputs,
                    runtime: record.runtime,
                    policy: record.policy,
                    uri: record.uri,
                    parents: record.parents,
                    nonce: record.nonce,
                    deadline,
                    signature: Bytes::from(sig),
                },
            )
            .await?;
        let e = self.event::<IReceiptRegistry::ProvenanceRecorded>(&r, self.contracts.receipts)?;
        self.check(
            e.attester == self.actors.agent.address() && e.parents == parents,
            "ProvenanceRecorded with the agent as attester",
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
            "record #{}: {name} attested by the agent's key{}",
            e.recordId,
            if parents.is_empty() {
                String::new()
            } else {
                format!(", derived from #{}", parents[0])
            }
        ));
        Ok(e.recordId)
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

    async fn expect_balance(&mut self, who: &str, address: Address, want: U256) -> Result<()> {
        let have = self
            .view(
                self.contracts.token,
                ITestToken::balanceOfCall { account: address },
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
