//! Agents' passports: an ERC-8004 agent's identity (owner, registration file, wallet, transfers)
//! and its reputation, where only feedback a payment backs is counted.
//!
//! ERC-8004's `getSummary` averages the feedback of whichever clients its caller names, so
//! anyone can fill an agent's record with clients that never dealt with it. Bursar's
//! ReceiptRegistry gives feedback only for a receipt, on the signature of one of its sides, on
//! the agent at the other side (`contracts/receipt-registry/src/feedback.rs` checks it on
//! chain: the receipt recorded and not released, the signer its payer's session key or owner or
//! its payee, the rated side the agent's owner or wallet, the rater's side not the agent's,
//! once per receipt and side). So a feedback counts when its client is the ReceiptRegistry and
//! it is not revoked — `getSummary(agent, [ReceiptRegistry], "", "")` gives the same figure, and
//! any ERC-8004 client can ask it. Each counted entry names its receipt and the side that gave
//! it; every other feedback is listed apart (`not_paid_for`).
//!
//! The passport also tells the agent's history: the sessions that ran for it (their signed
//! metadata names it, and their owner held it when they opened), what they spent and produced,
//! and what its wallet was paid while it was its wallet ([`Activity`]).
//!
//! [`fold`] is pure and unit-tested; [`Agents`] reads the events and hands them to it.

use std::collections::{BTreeMap, BTreeSet};

use alloy_primitives::{hex, Address, B256, U256};
use bursar_bindings::erc8004::{session_metadata, Summary};
use bursar_bindings::receipts::{receipt_commitment, Receipt};
use serde::Serialize;
use utoipa::ToSchema;

use crate::metrics::Metrics;
use crate::records::{chain, receipt_of, Chain};
use crate::store::{LogFilter, LogRow, Store, StoreError};

/// The Identity Registry's events about one agent.
const IDENTITY_EVENTS: &[&str] = &["Registered", "URIUpdated", "MetadataSet", "Transfer"];
/// The Reputation Registry's events about one agent.
const REPUTATION_EVENTS: &[&str] = &["NewFeedback", "FeedbackRevoked", "ResponseAppended"];

/// An agent's passport.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Passport {
    /// Its ERC-8004 id (decimal).
    pub agent_id: String,
    /// Who holds it now.
    pub owner: String,
    /// Its registration file.
    #[serde(rename = "agentURI")]
    pub agent_uri: String,
    /// Where it is paid (the zero address when unset: a transfer clears it).
    pub agent_wallet: String,
    /// Its registration.
    pub registered: Chain,
    /// Its owners in order, from the registrant.
    pub owners: Vec<String>,
    /// Its reputation.
    pub reputation: Reputation,
    /// The sessions that ran for it: opened by its owner of the time, whose signed `metadata`
    /// names it (`"ERC-8004"` and its id), with what each spent.
    pub sessions: Vec<AgentSession>,
    /// Sessions whose metadata names it but whose owner did not hold it when they opened:
    /// not its, and counted nowhere here.
    pub claimed_by_others: Vec<String>,
    /// What it was paid: receipts whose payee was its `agentWallet` when paid.
    pub sales: Vec<Sale>,
    /// What its sessions produced (provenance records, in chain order).
    pub provenance: Vec<Produced>,
    /// Spent by its sessions and earned at its wallet, per token.
    pub totals: Vec<Total>,
}

/// A session that ran for an agent.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentSession {
    /// The session.
    pub session_id: String,
    /// Who opened it (the agent's owner then).
    pub owner: String,
    /// Its token.
    pub token: String,
    /// Its first deposit (base units).
    pub deposit: String,
    /// What its receipts add up to (base units).
    pub spent: String,
    /// How many receipts it has.
    pub payments: u64,
    /// Its opening.
    pub opened: Chain,
}

/// A payment an agent received at its wallet.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Sale {
    /// The receipt.
    pub receipt_id: String,
    /// The paying session.
    pub session_id: String,
    /// The paying owner.
    pub payer: String,
    /// The wallet paid.
    pub payee: String,
    /// The token.
    pub token: String,
    /// Base units.
    pub amount: String,
    /// What for (32 bytes).
    pub purpose: String,
    /// Where.
    pub chain: Chain,
}

/// A provenance record of one of an agent's sessions.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Produced {
    /// The record.
    pub record_id: String,
    /// Its session.
    pub session_id: String,
    /// What was produced (32 bytes).
    pub subject: String,
    /// The records it derives from.
    pub parents: Vec<String>,
    /// The receipt of the purchase it was made from, when its inputs name one (the
    /// commitment of one of its session's receipts).
    pub bought_with: Option<String>,
    /// Where.
    pub chain: Chain,
}

/// An agent's money in one token.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Total {
    /// The token.
    pub token: String,
    /// Spent by its sessions (base units).
    pub spent: String,
    /// Earned at its wallet (base units).
    pub earned: String,
}

/// The events of an agent's activity, as [`Agents`] reads them.
#[derive(Clone, Debug, Default)]
pub struct Activity {
    /// `SessionOpened` events whose metadata names the agent.
    pub opened: Vec<LogRow>,
    /// `ReceiptRecorded` events of those sessions, and those paid to any wallet it had.
    pub receipts: Vec<LogRow>,
    /// `ProvenanceRecorded` events of those sessions.
    pub records: Vec<LogRow>,
}

/// Feedback on an agent: the summary of what counts, and every entry.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Reputation {
    /// How many feedbacks count (payment-backed, unrevoked).
    pub count: u64,
    /// Their mean, as `getSummary` computes it: an integer at `decimals`.
    pub value: String,
    /// The decimals of `value`.
    pub decimals: u8,
    /// The clients whose feedback counts: the list to hand `getSummary` for the same figure.
    pub clients: Vec<String>,
    /// How many feedbacks do not count.
    pub not_counted: u64,
    /// Every feedback, in chain order.
    pub feedback: Vec<Feedback>,
}

/// One feedback and whether it counts.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Feedback {
    /// Its author (`msg.sender` of `giveFeedback`).
    pub client: String,
    /// Its index among the client's feedback on this agent (from 1).
    pub index: u64,
    /// The value, an integer at `valueDecimals`.
    pub value: String,
    /// The decimals of `value`.
    pub value_decimals: u8,
    /// Tags.
    pub tag1: String,
    /// Tags.
    pub tag2: String,
    /// The endpoint rated.
    pub endpoint: String,
    /// Its off-chain document.
    #[serde(rename = "feedbackURI")]
    pub feedback_uri: String,
    /// What it commits to: for payment-backed feedback, the receipt's commitment.
    pub feedback_hash: String,
    /// Revoked by its author.
    pub revoked: bool,
    /// Responses appended to it.
    pub responses: u64,
    /// The receipt that backs it, when one does.
    pub receipt_id: Option<String>,
    /// Which side of that receipt gave it: `payer` (rating the payee's agent) or `payee`.
    pub side: Option<&'static str>,
    /// Whether it counts in the summary.
    pub counted: bool,
    /// Why not, when it does not: `not_paid_for` (not given through the ReceiptRegistry for
    /// a receipt), `revoked`.
    pub not_counted: Option<&'static str>,
    /// Where it is on chain.
    pub chain: Chain,
}

/// Feedback the ReceiptRegistry gave for a receipt (its `ReceiptFeedbackGiven`).
#[derive(Clone, Debug)]
pub struct Paid {
    /// The receipt's id.
    pub receipt_id: String,
    /// The receipt as recorded.
    pub receipt: Receipt,
    /// Whether the payee gave it (on the payer's agent).
    pub by_payee: bool,
    /// The ReceiptRegistry: the feedback's client.
    pub registry: Address,
    /// The feedback's index among the registry's on this agent.
    pub index: u64,
}

fn arg<'a>(r: &'a LogRow, name: &str) -> &'a str {
    r.args
        .as_ref()
        .and_then(|a| a.get(name))
        .and_then(|v| v.as_str())
        .unwrap_or_default()
}

fn address(r: &LogRow, name: &str) -> Address {
    arg(r, name).parse().unwrap_or_default()
}

fn number(r: &LogRow, name: &str) -> u64 {
    r.args
        .as_ref()
        .and_then(|a| a.get(name))
        .and_then(|v| v.as_u64())
        .unwrap_or_default()
}

/// An agent's identity, folded from the Identity Registry's events about it.
#[derive(Clone, Debug)]
pub struct Identity {
    registered: LogRow,
    uri: String,
    /// Its owners in order, from the registrant, each from where it took the agent.
    owners: Vec<(Position, Address)>,
    /// Its wallets in order, each from where it was set (zero: cleared).
    wallets: Vec<(Position, Address)>,
}

/// Where an event is in the chain's order: its block, and its index there.
type Position = (u64, u64);

fn position(r: &LogRow) -> Position {
    (r.block_number, r.log_index)
}

/// What `timeline` says at `at`: its last entry from `at` or before (zero before the first).
fn as_of(timeline: &[(Position, Address)], at: Position) -> Address {
    timeline
        .iter()
        .rev()
        .find(|(from, _)| *from <= at)
        .map_or(Address::ZERO, |(_, a)| *a)
}

impl Identity {
    /// Folds `rows` (the agent's identity events, in chain order); `None` before it is
    /// registered.
    pub fn fold(rows: &[LogRow]) -> Option<Identity> {
        let registered = rows
            .iter()
            .find(|r| r.event.as_deref() == Some("Registered"))?;
        let mut id = Identity {
            registered: registered.clone(),
            uri: arg(registered, "agentURI").to_owned(),
            owners: vec![(position(registered), address(registered, "owner"))],
            wallets: Vec::new(),
        };
        for r in rows {
            match r.event.as_deref() {
                Some("URIUpdated") => id.uri = arg(r, "newURI").to_owned(),
                Some("MetadataSet") if arg(r, "metadataKey") == "agentWallet" => {
                    let value = hex::decode(arg(r, "metadataValue")).unwrap_or_default();
                    let wallet = match value.len() {
                        20 => Address::from_slice(&value),
                        _ => Address::ZERO,
                    };
                    id.wallets.push((position(r), wallet));
                }
                Some("Transfer") if !address(r, "from").is_zero() => {
                    id.owners.push((position(r), address(r, "to")));
                }
                _ => {}
            }
        }
        Some(id)
    }

    /// Every address that was the agent's wallet at some time.
    pub fn wallets(&self) -> BTreeSet<Address> {
        self.wallets
            .iter()
            .map(|(_, w)| *w)
            .filter(|w| !w.is_zero())
            .collect()
    }
}

/// The passport of agent `agent_id`: its identity, and its feedback (the Reputation Registry's
/// events about it, in chain order), counted where the ReceiptRegistry gave it for a receipt
/// (`paid`).
pub fn fold(
    metrics: &Metrics,
    agent_id: &str,
    identity: &Identity,
    reputation: &[LogRow],
    paid: &[Paid],
    activity: &Activity,
) -> Passport {
    let mut entries: Vec<Feedback> = Vec::new();
    for r in reputation {
        let client = address(r, "clientAddress");
        let index = number(r, "feedbackIndex");
        let entry = entries
            .iter()
            .position(|f| f.client == client.to_checksum(None) && f.index == index);
        match (r.event.as_deref(), entry) {
            (Some("NewFeedback"), _) => {
                let backed = paid
                    .iter()
                    .find(|p| p.registry == client && p.index == index);
                entries.push(Feedback {
                    client: client.to_checksum(None),
                    index,
                    value: arg(r, "value").to_owned(),
                    value_decimals: number(r, "valueDecimals") as u8,
                    tag1: arg(r, "tag1").to_owned(),
                    tag2: arg(r, "tag2").to_owned(),
                    endpoint: arg(r, "endpoint").to_owned(),
                    feedback_uri: arg(r, "feedbackURI").to_owned(),
                    feedback_hash: arg(r, "feedbackHash").to_owned(),
                    revoked: false,
                    responses: 0,
                    receipt_id: backed.map(|p| p.receipt_id.clone()),
                    side: backed.map(|p| if p.by_payee { "payee" } else { "payer" }),
                    counted: backed.is_some(),
                    not_counted: backed.is_none().then_some("not_paid_for"),
                    chain: chain(metrics, r),
                });
            }
            (Some("FeedbackRevoked"), Some(i)) => {
                let f = &mut entries[i];
                f.revoked = true;
                if f.counted {
                    f.counted = false;
                    f.not_counted = Some("revoked");
                }
            }
            (Some("ResponseAppended"), Some(i)) => entries[i].responses += 1,
            _ => {}
        }
    }

    let mut summary = Summary::default();
    let mut clients = BTreeSet::new();
    for f in entries.iter().filter(|f| f.counted) {
        summary.add(f.value.parse().unwrap_or_default(), f.value_decimals);
        clients.insert(f.client.clone());
    }
    let (count, value, decimals) = summary.finish();
    let owner = identity.owners.last().map_or(Address::ZERO, |(_, o)| *o);
    let wallet = identity.wallets.last().map_or(Address::ZERO, |(_, w)| *w);
    let mut passport = Passport {
        agent_id: agent_id.to_owned(),
        owner: owner.to_checksum(None),
        agent_uri: identity.uri.clone(),
        agent_wallet: wallet.to_checksum(None),
        registered: chain(metrics, &identity.registered),
        owners: identity
            .owners
            .iter()
            .map(|(_, o)| o.to_checksum(None))
            .collect(),
        reputation: Reputation {
            count,
            value: value.to_string(),
            decimals,
            clients: clients.into_iter().collect(),
            not_counted: entries.iter().filter(|f| !f.counted).count() as u64,
            feedback: entries,
        },
        sessions: Vec::new(),
        claimed_by_others: Vec::new(),
        sales: Vec::new(),
        provenance: Vec::new(),
        totals: Vec::new(),
    };
    fold_activity(metrics, &mut passport, identity, activity);
    passport
}

/// Adds to `passport` its sessions (those opened by the agent's owner of the time whose
/// metadata names it), what they spent and produced, and what its wallet was paid.
fn fold_activity(metrics: &Metrics, passport: &mut Passport, identity: &Identity, a: &Activity) {
    let tag = passport
        .agent_id
        .parse()
        .ok()
        .and_then(session_metadata)
        .map(hex::encode_prefixed);
    let mut totals: BTreeMap<String, (U256, U256)> = BTreeMap::new();
    let mut ours = BTreeSet::new();
    for r in &a.opened {
        let session = arg(r, "sessionId").to_owned();
        if tag.as_deref() != Some(arg(r, "metadata")) || ours.contains(&session) {
            continue;
        }
        let owner = address(r, "owner");
        if owner.is_zero() || as_of(&identity.owners, position(r)) != owner {
            passport.claimed_by_others.push(session);
            continue;
        }
        ours.insert(session.clone());
        passport.sessions.push(AgentSession {
            session_id: session,
            owner: owner.to_checksum(None),
            token: arg(r, "token").to_owned(),
            deposit: arg(r, "deposit").to_owned(),
            spent: "0".into(),
            payments: 0,
            opened: chain(metrics, r),
        });
    }
    let mut seen = BTreeSet::new();
    for r in &a.receipts {
        if r.event.as_deref() != Some("ReceiptRecorded") || !seen.insert(position(r)) {
            continue;
        }
        let (session, token) = (arg(r, "sessionId"), arg(r, "token"));
        let amount: U256 = arg(r, "amount").parse().unwrap_or_default();
        if let Some(s) = passport
            .sessions
            .iter_mut()
            .find(|s| s.session_id == session)
        {
            let spent = s.spent.parse::<U256>().unwrap_or_default() + amount;
            s.spent = spent.to_string();
            s.payments += 1;
            totals.entry(token.to_owned()).or_default().0 += amount;
        }
        let payee = address(r, "payee");
        if !payee.is_zero() && as_of(&identity.wallets, position(r)) == payee {
            totals.entry(token.to_owned()).or_default().1 += amount;
            passport.sales.push(Sale {
                receipt_id: arg(r, "receiptId").to_owned(),
                session_id: session.to_owned(),
                payer: arg(r, "payer").to_owned(),
                payee: payee.to_checksum(None),
                token: token.to_owned(),
                amount: amount.to_string(),
                purpose: arg(r, "purpose").to_owned(),
                chain: chain(metrics, r),
            });
        }
    }
    let commitments: Vec<(B256, &LogRow)> = a
        .receipts
        .iter()
        .map(|r| (receipt_commitment(&receipt_of(r)), r))
        .collect();
    for r in &a.records {
        if r.event.as_deref() == Some("ProvenanceRecorded") && ours.contains(arg(r, "sessionId")) {
            let inputs: B256 = arg(r, "inputs").parse().unwrap_or_default();
            let bought_with = commitments
                .iter()
                .find(|(c, receipt)| {
                    *c == inputs && arg(receipt, "sessionId") == arg(r, "sessionId")
                })
                .map(|(_, receipt)| arg(receipt, "receiptId").to_owned());
            let parents = r.args.as_ref().and_then(|a| a.get("parents"));
            passport.provenance.push(Produced {
                record_id: arg(r, "recordId").to_owned(),
                session_id: arg(r, "sessionId").to_owned(),
                subject: arg(r, "subject").to_owned(),
                parents: parents
                    .and_then(|p| p.as_array())
                    .into_iter()
                    .flatten()
                    .filter_map(|p| p.as_str().map(str::to_owned))
                    .collect(),
                bought_with,
                chain: chain(metrics, r),
            });
        }
    }
    passport.totals = totals
        .into_iter()
        .map(|(token, (spent, earned))| Total {
            token,
            spent: spent.to_string(),
            earned: earned.to_string(),
        })
        .collect();
}

/// Reads passports as of a block.
#[derive(Clone, Copy, Debug)]
pub struct Agents<'a> {
    /// The database.
    pub store: &'a Store,
    /// The node's safe and finalized blocks, for the events' finality.
    pub metrics: &'a Metrics,
    /// The last block counted.
    pub at: u64,
}

impl Agents<'_> {
    /// Agent `agent_id`'s passport (`None`: not registered as of the block).
    pub async fn passport(&self, agent_id: U256) -> Result<Option<Passport>, StoreError> {
        let id = agent_id.to_string();
        let of = |events: &'static [&'static str], registry: &'static str, key: &str| {
            let filter = LogFilter {
                events,
                args: vec![(key.to_owned(), id.clone())],
                to_block: Some(self.at),
                limit: u64::MAX,
                ..LogFilter::default()
            };
            async move {
                let rows = self.store.logs(&filter).await?;
                // Only the registries' own: anything else that emits these signatures (another
                // ERC-721's `Transfer` to a Bursar contract) is not this agent's.
                Ok::<_, StoreError>(
                    rows.into_iter()
                        .filter(|r| r.contract == registry)
                        .collect::<Vec<_>>(),
                )
            }
        };
        let mut rows = of(&IDENTITY_EVENTS[..3], "IdentityRegistry", "agentId").await?;
        rows.extend(of(&IDENTITY_EVENTS[3..], "IdentityRegistry", "tokenId").await?);
        rows.sort_by_key(position);
        let Some(identity) = Identity::fold(&rows) else {
            return Ok(None);
        };
        let reputation = of(REPUTATION_EVENTS, "ReputationRegistry", "agentId").await?;
        let given = of(&["ReceiptFeedbackGiven"], "ReceiptRegistry", "agentId").await?;
        let paid = self.receipts_of(&given).await?;
        let activity = self.activity(agent_id, &identity).await?;
        Ok(Some(fold(
            self.metrics,
            &id,
            &identity,
            &reputation,
            &paid,
            &activity,
        )))
    }

    /// The events [`fold_activity`] reads: sessions whose metadata names the agent, their
    /// receipts and records, and the receipts paid to any wallet it had.
    async fn activity(&self, agent_id: U256, identity: &Identity) -> Result<Activity, StoreError> {
        let Some(tag) = session_metadata(agent_id) else {
            return Ok(Activity::default());
        };
        let rows = |event: &str, session: Option<&str>, args: Vec<(String, String)>| {
            let filter = LogFilter {
                event: Some(event.to_owned()),
                session_id: session.map(str::to_owned),
                args,
                to_block: Some(self.at),
                limit: u64::MAX,
                ..LogFilter::default()
            };
            async move { self.store.logs(&filter).await }
        };
        let ours = |r: &LogRow, contract: &str| r.contract == contract;
        let mut a = Activity::default();
        let metadata = vec![("metadata".to_owned(), hex::encode_prefixed(tag))];
        a.opened = rows("SessionOpened", None, metadata).await?;
        a.opened.retain(|r| ours(r, "SessionWallet"));
        for opened in &a.opened {
            let session = Some(arg(opened, "sessionId"));
            a.receipts
                .extend(rows("ReceiptRecorded", session, Vec::new()).await?);
            a.records
                .extend(rows("ProvenanceRecorded", session, Vec::new()).await?);
        }
        for wallet in identity.wallets() {
            let payee = vec![("payee".to_owned(), wallet.to_checksum(None))];
            a.receipts
                .extend(rows("ReceiptRecorded", None, payee).await?);
        }
        a.receipts.retain(|r| ours(r, "ReceiptRegistry"));
        a.records.retain(|r| ours(r, "ReceiptRegistry"));
        a.receipts.sort_by_key(position);
        Ok(a)
    }

    /// The receipts behind the ReceiptRegistry's feedback on an agent (`given`: its
    /// `ReceiptFeedbackGiven` events), each as `ReceiptRecorded` announced it.
    async fn receipts_of(&self, given: &[LogRow]) -> Result<Vec<Paid>, StoreError> {
        let mut out = Vec::with_capacity(given.len());
        for g in given {
            let recorded = LogFilter {
                event: Some("ReceiptRecorded".into()),
                args: vec![("receiptId".into(), arg(g, "receiptId").to_owned())],
                to_block: Some(self.at),
                limit: u64::MAX,
                ..LogFilter::default()
            };
            let rows = self.store.logs(&recorded).await?;
            let Some(r) = rows.iter().find(|r| r.address == g.address) else {
                continue;
            };
            out.push(Paid {
                receipt_id: arg(g, "receiptId").to_owned(),
                receipt: receipt_of(r),
                by_payee: g
                    .args
                    .as_ref()
                    .and_then(|a| a.get("byPayee"))
                    .and_then(|v| v.as_bool())
                    .unwrap_or_default(),
                registry: g.address.parse().unwrap_or_default(),
                index: number(g, "feedbackIndex"),
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const OWNER: Address = Address::repeat_byte(0x0a);
    const WALLET: Address = Address::repeat_byte(0x0b);
    const SYBIL: Address = Address::repeat_byte(0x0c);
    const REGISTRY: Address = Address::repeat_byte(0x0d);
    const NEXT_OWNER: Address = Address::repeat_byte(0x0e);

    fn row(block: u64, event: &str, args: serde_json::Value) -> LogRow {
        LogRow {
            block_number: block,
            event: Some(event.into()),
            args: Some(args),
            canonical: true,
            ..LogRow::default()
        }
    }

    fn identity() -> Identity {
        let rows = [
            row(
                1,
                "Registered",
                json!({"agentId": "0", "agentURI": "u", "owner": OWNER.to_checksum(None)}),
            ),
            row(
                2,
                "MetadataSet",
                json!({"agentId": "0", "metadataKey": "agentWallet",
                "metadataValue": hex::encode_prefixed(WALLET)}),
            ),
            row(
                9,
                "Transfer",
                json!({"from": OWNER.to_checksum(None), "to": NEXT_OWNER.to_checksum(None), "tokenId": "0"}),
            ),
        ];
        Identity::fold(&rows).unwrap()
    }

    fn paid(id: &str, index: u64, by_payee: bool) -> Paid {
        Paid {
            receipt_id: id.into(),
            receipt: Receipt::default(),
            by_payee,
            registry: REGISTRY,
            index,
        }
    }

    fn feedback(block: u64, client: Address, index: u64, value: i128) -> LogRow {
        row(
            block,
            "NewFeedback",
            json!({
                "agentId": "0", "clientAddress": client.to_checksum(None), "feedbackIndex": index,
                "value": value.to_string(), "valueDecimals": 0, "tag1": "", "tag2": "",
                "endpoint": "", "feedbackURI": "", "feedbackHash": hex::encode_prefixed([0; 32]),
            }),
        )
    }

    fn about(block: u64, event: &str, client: Address, index: u64) -> LogRow {
        row(
            block,
            event,
            json!({"agentId": "0", "clientAddress": client.to_checksum(None), "feedbackIndex": index}),
        )
    }

    #[test]
    fn only_feedback_the_receipt_registry_gave_for_a_receipt_counts() {
        let id = identity();
        let rows = [
            feedback(3, REGISTRY, 1, 80),
            // A client that names no receipt through the registry: a Sybil, or the payer
            // calling the Reputation Registry itself.
            feedback(4, SYBIL, 1, 100),
            feedback(5, REGISTRY, 2, 90),
            feedback(6, REGISTRY, 3, 1),
            // The registry's index with no `ReceiptFeedbackGiven` behind it (not ours).
            feedback(6, REGISTRY, 4, 5),
            about(8, "FeedbackRevoked", REGISTRY, 3),
            about(8, "ResponseAppended", REGISTRY, 1),
        ];
        let paid = [paid("1", 1, false), paid("2", 2, true), paid("3", 3, false)];
        let p = fold(
            &Metrics::default(),
            "0",
            &id,
            &rows,
            &paid,
            &Activity::default(),
        );
        let f = &p.reputation.feedback;
        let reasons: Vec<_> = f.iter().map(|f| f.not_counted).collect();
        assert_eq!(
            reasons,
            [
                None,
                Some("not_paid_for"),
                None,
                Some("revoked"),
                Some("not_paid_for")
            ]
        );
        assert_eq!((f[0].side, f[2].side), (Some("payer"), Some("payee")));
        assert_eq!(f[2].receipt_id.as_deref(), Some("2"));
        assert_eq!(f[1].receipt_id, None);
        // (80 + 90) / 2, what `getSummary(agent, [registry])` answers.
        assert_eq!((p.reputation.count, p.reputation.value.as_str()), (2, "85"));
        assert_eq!(p.reputation.clients, [REGISTRY.to_checksum(None)]);
        assert_eq!(p.reputation.not_counted, 3);
        assert_eq!(f[0].responses, 1);
        assert_eq!(p.owner, NEXT_OWNER.to_checksum(None));
        assert_eq!(p.agent_wallet, WALLET.to_checksum(None));
        assert_eq!(p.owners.len(), 2);
    }

    fn at(block: u64, log: u64, event: &str, args: serde_json::Value) -> LogRow {
        LogRow {
            log_index: log,
            ..row(block, event, args)
        }
    }

    fn opened(block: u64, session: &str, owner: Address, agent: u64) -> LogRow {
        let tag = session_metadata(U256::from(agent)).unwrap();
        row(
            block,
            "SessionOpened",
            json!({"sessionId": session, "owner": owner.to_checksum(None), "token": "T",
                "deposit": "100", "metadata": hex::encode_prefixed(tag)}),
        )
    }

    fn receipt(block: u64, id: &str, session: &str, payee: Address, amount: u64) -> LogRow {
        row(
            block,
            "ReceiptRecorded",
            json!({"receiptId": id, "sessionId": session, "payee": payee.to_checksum(None),
                "payer": SYBIL.to_checksum(None), "token": "T", "amount": amount.to_string(),
                "purpose": "0x00"}),
        )
    }

    #[test]
    fn an_agents_sessions_are_its_owners_of_the_time_and_its_sales_reach_its_wallet_of_the_time() {
        // OWNER registers agent 0 (block 1) and sets WALLET (2); at block 9 the agent moves to
        // NEXT_OWNER, and the registry clears the wallet in the same transaction.
        let owner = OWNER.to_checksum(None);
        let id = Identity::fold(&[
            row(
                1,
                "Registered",
                json!({"agentId": "0", "agentURI": "u", "owner": owner}),
            ),
            row(
                2,
                "MetadataSet",
                json!({"agentId": "0", "metadataKey": "agentWallet",
                "metadataValue": hex::encode_prefixed(WALLET)}),
            ),
            at(
                9,
                0,
                "MetadataSet",
                json!({"agentId": "0", "metadataKey": "agentWallet",
                "metadataValue": "0x"}),
            ),
            at(
                9,
                1,
                "Transfer",
                json!({"from": owner, "to": NEXT_OWNER.to_checksum(None),
                "tokenId": "0"}),
            ),
        ])
        .unwrap();
        let bought = receipt_commitment(&receipt_of(&receipt(5, "1", "0xa", SYBIL, 5)));
        let activity = Activity {
            opened: vec![
                opened(3, "0xa", OWNER, 0),
                // Names agent 0 without holding it: a stranger, and the old owner after the
                // transfer.
                opened(4, "0xb", SYBIL, 0),
                opened(10, "0xc", OWNER, 0),
                opened(11, "0xd", NEXT_OWNER, 0),
                // Another agent's.
                opened(5, "0xe", OWNER, 1),
            ],
            receipts: vec![
                receipt(5, "1", "0xa", SYBIL, 5),
                receipt(6, "2", "0xf", WALLET, 7),
                // The same event twice (read as the session's and as the wallet's).
                receipt(6, "2", "0xf", WALLET, 7),
                receipt(7, "3", "0xb", SYBIL, 100),
                receipt(12, "4", "0xd", SYBIL, 1),
                // Paid to the old wallet after the transfer cleared it: not the agent's.
                receipt(13, "5", "0xf", WALLET, 50),
            ],
            records: vec![
                // Made from what receipt 1 bought: its inputs are the receipt's commitment.
                row(
                    8,
                    "ProvenanceRecorded",
                    json!({"recordId": "1", "sessionId": "0xa", "subject": "0x01",
                    "parents": [], "inputs": hex::encode_prefixed(bought)}),
                ),
                row(
                    8,
                    "ProvenanceRecorded",
                    json!({"recordId": "2", "sessionId": "0xb",
                    "subject": "0x02", "parents": ["1"]}),
                ),
            ],
        };
        let p = fold(&Metrics::default(), "0", &id, &[], &[], &activity);
        let sessions: Vec<_> = p
            .sessions
            .iter()
            .map(|s| (s.session_id.as_str(), s.spent.as_str(), s.payments))
            .collect();
        assert_eq!(sessions, [("0xa", "5", 1), ("0xd", "1", 1)]);
        assert_eq!(p.claimed_by_others, ["0xb", "0xc"]);
        let sales: Vec<_> = p.sales.iter().map(|s| s.receipt_id.as_str()).collect();
        assert_eq!(sales, ["2"]);
        assert_eq!(p.provenance.len(), 1);
        assert_eq!(p.provenance[0].record_id, "1");
        assert_eq!(p.provenance[0].bought_with.as_deref(), Some("1"));
        assert_eq!(p.totals.len(), 1);
        assert_eq!(
            (p.totals[0].spent.as_str(), p.totals[0].earned.as_str()),
            ("6", "7")
        );
        assert_eq!(p.agent_wallet, Address::ZERO.to_checksum(None));
    }
}
