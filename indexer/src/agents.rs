//! Agents' passports: an ERC-8004 agent's identity (owner, registration file, wallet, transfers)
//! and its reputation, where only feedback a payment backs is counted.
//!
//! ERC-8004's `getSummary` averages the feedback of whichever clients its caller names, so
//! anyone can fill an agent's record with clients that never dealt with it. Bursar holds the
//! list that cannot be gamed: receipts. A feedback counts when
//! - its `feedbackHash` is the on-chain commitment of a Bursar receipt (`keccak256(abi.encode(
//!   receipt))`, what ReceiptRegistry stores and `verifyReceipt` checks): the proof of payment,
//!   checkable by anyone without an off-chain file;
//! - that receipt paid this agent: its payee is or was, before the feedback, the agent's owner
//!   or its `agentWallet` (a passport keeps the history of the addresses it was paid at);
//! - the client is the paying side: the receipt's payer (the session's owner) or its session's
//!   key;
//! - the payer is not the agent's owner (an owner paying its own agent buys no reputation);
//! - no earlier feedback named the same receipt (one payment, one rating; two receipts alike in
//!   every field — session, payer, payee, token, amount, purpose, second — share a commitment
//!   and so back one rating);
//! - it is not revoked.
//!
//! Everything else is listed apart with the reason it is not counted. [`fold`] is pure and
//! unit-tested; [`Agents`] reads the events and hands them to it.

use std::collections::{BTreeMap, BTreeSet};

use alloy_primitives::{hex, Address, B256, U256};
use bursar_bindings::erc8004::Summary;
use bursar_bindings::receipts::{receipt_commitment, Receipt};
use serde::Serialize;
use utoipa::ToSchema;

use crate::metrics::Metrics;
use crate::records::{chain, Chain};
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
    /// Whether it counts in the summary.
    pub counted: bool,
    /// Why not, when it does not: `no_receipt`, `not_paid_to_agent`, `not_the_payer`,
    /// `owner_paid`, `receipt_used`, `revoked`.
    pub not_counted: Option<&'static str>,
    /// Where it is on chain.
    pub chain: Chain,
}

/// A receipt, with the session key of the session that paid it.
#[derive(Clone, Debug)]
pub struct Paid {
    /// Its id.
    pub receipt_id: String,
    /// The receipt as recorded.
    pub receipt: Receipt,
    /// The paying session's key.
    pub session_key: Option<Address>,
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
    wallet: Address,
    /// Its owners in order, each from where it took the agent.
    owners: Vec<((u64, u64), Address)>,
    /// Every address it could be paid at, from where it became one: its owners and wallets.
    payees: Vec<((u64, u64), Address)>,
}

fn position(r: &LogRow) -> (u64, u64) {
    (r.block_number, r.log_index)
}

impl Identity {
    /// Folds `rows` (the agent's identity events, in chain order); `None` before it is
    /// registered.
    pub fn fold(rows: &[LogRow]) -> Option<Identity> {
        let registered = rows
            .iter()
            .find(|r| r.event.as_deref() == Some("Registered"))?;
        let first = (position(registered), address(registered, "owner"));
        let mut id = Identity {
            registered: registered.clone(),
            uri: arg(registered, "agentURI").to_owned(),
            wallet: Address::ZERO,
            owners: vec![first],
            payees: vec![first],
        };
        for r in rows {
            match r.event.as_deref() {
                Some("URIUpdated") => id.uri = arg(r, "newURI").to_owned(),
                Some("MetadataSet") if arg(r, "metadataKey") == "agentWallet" => {
                    let value = hex::decode(arg(r, "metadataValue")).unwrap_or_default();
                    id.wallet = match value.len() {
                        20 => Address::from_slice(&value),
                        _ => Address::ZERO,
                    };
                    if !id.wallet.is_zero() {
                        id.payees.push((position(r), id.wallet));
                    }
                }
                Some("Transfer") if !address(r, "from").is_zero() => {
                    let owner = (position(r), address(r, "to"));
                    id.owners.push(owner);
                    id.payees.push(owner);
                }
                _ => {}
            }
        }
        Some(id)
    }

    /// Every address the agent could have been paid at.
    pub fn payees(&self) -> BTreeSet<Address> {
        self.payees.iter().map(|(_, a)| *a).collect()
    }

    fn was_payee(&self, who: Address, at: (u64, u64)) -> bool {
        self.payees
            .iter()
            .any(|(since, a)| *a == who && *since <= at)
    }

    fn owner_at(&self, at: (u64, u64)) -> Address {
        self.owners
            .iter()
            .rfind(|(since, _)| *since <= at)
            .map_or(self.owners[0].1, |(_, a)| *a)
    }
}

/// The passport of agent `agent_id`: its identity, and its feedback (the Reputation Registry's
/// events about it, in chain order) judged against `receipts` (any; only those naming it
/// count).
pub fn fold(
    metrics: &Metrics,
    agent_id: &str,
    identity: &Identity,
    reputation: &[LogRow],
    receipts: &[Paid],
) -> Passport {
    let by_commitment: BTreeMap<B256, &Paid> = receipts
        .iter()
        .map(|p| (receipt_commitment(&p.receipt), p))
        .collect();
    let mut used = BTreeSet::new();
    let mut entries: Vec<Feedback> = Vec::new();
    for r in reputation {
        let client = address(r, "clientAddress").to_checksum(None);
        let index = number(r, "feedbackIndex");
        let entry = entries
            .iter()
            .position(|f| f.client == client && f.index == index);
        match (r.event.as_deref(), entry) {
            (Some("NewFeedback"), _) => {
                let hash: B256 = arg(r, "feedbackHash").parse().unwrap_or_default();
                let paid = by_commitment.get(&hash).copied();
                let reason = judge(identity, r, paid, &mut used);
                entries.push(Feedback {
                    client,
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
                    receipt_id: paid.map(|p| p.receipt_id.clone()),
                    counted: reason.is_none(),
                    not_counted: reason,
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
    let owner = identity.owners.last().map_or(Address::ZERO, |(_, a)| *a);
    Passport {
        agent_id: agent_id.to_owned(),
        owner: owner.to_checksum(None),
        agent_uri: identity.uri.clone(),
        agent_wallet: identity.wallet.to_checksum(None),
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
    }
}

/// Why feedback `r` backed by `paid` (if any) does not count, or `None` when it does (then its
/// receipt is `used`).
fn judge(
    identity: &Identity,
    r: &LogRow,
    paid: Option<&Paid>,
    used: &mut BTreeSet<String>,
) -> Option<&'static str> {
    let Some(p) = paid else {
        return Some("no_receipt");
    };
    let (client, at) = (address(r, "clientAddress"), position(r));
    if !identity.was_payee(p.receipt.payee, at) {
        return Some("not_paid_to_agent");
    }
    if client != p.receipt.payer && Some(client) != p.session_key {
        return Some("not_the_payer");
    }
    if p.receipt.payer == identity.owner_at(at) {
        return Some("owner_paid");
    }
    if !used.insert(p.receipt_id.clone()) {
        return Some("receipt_used");
    }
    None
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
        let receipts = self.receipts_naming(&identity, &reputation).await?;
        Ok(Some(fold(
            self.metrics,
            &id,
            &identity,
            &reputation,
            &receipts,
        )))
    }

    /// The receipts the agent's feedback names: read by payee (each address the agent could
    /// be paid at), kept when a feedback's hash is their commitment.
    async fn receipts_naming(
        &self,
        identity: &Identity,
        reputation: &[LogRow],
    ) -> Result<Vec<Paid>, StoreError> {
        let hashes: BTreeSet<&str> = reputation
            .iter()
            .filter(|r| r.event.as_deref() == Some("NewFeedback"))
            .map(|r| arg(r, "feedbackHash"))
            .collect();
        if hashes.is_empty() {
            return Ok(Vec::new());
        }
        let mut rows = Vec::new();
        for payee in identity.payees() {
            let filter = LogFilter {
                event: Some("ReceiptRecorded".into()),
                args: vec![("payee".into(), payee.to_checksum(None))],
                to_block: Some(self.at),
                limit: u64::MAX,
                ..LogFilter::default()
            };
            rows.extend(self.store.logs(&filter).await?);
        }
        let mut out = Vec::new();
        for r in rows {
            if r.contract != "ReceiptRegistry" {
                continue;
            }
            let receipt = Receipt {
                sessionId: arg(&r, "sessionId").parse().unwrap_or_default(),
                payer: address(&r, "payer"),
                payee: address(&r, "payee"),
                token: address(&r, "token"),
                amount: arg(&r, "amount").parse().unwrap_or_default(),
                purpose: arg(&r, "purpose").parse().unwrap_or_default(),
                timestamp: number(&r, "timestamp"),
            };
            let commitment = hex::encode_prefixed(receipt_commitment(&receipt));
            if !hashes.contains(commitment.as_str()) {
                continue;
            }
            let opened = LogFilter {
                event: Some("SessionOpened".into()),
                session_id: r.session_id.clone(),
                to_block: Some(self.at),
                limit: 1,
                ..LogFilter::default()
            };
            let session_key = self
                .store
                .logs(&opened)
                .await?
                .first()
                .map(|o| address(o, "sessionKey"));
            out.push(Paid {
                receipt_id: arg(&r, "receiptId").to_owned(),
                receipt,
                session_key,
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
    const PAYER: Address = Address::repeat_byte(0x0c);
    const SESSION_KEY: Address = Address::repeat_byte(0x0d);
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

    fn paid(id: &str, payer: Address, payee: Address) -> Paid {
        Paid {
            receipt_id: id.into(),
            receipt: Receipt {
                sessionId: U256::from(1),
                payer,
                payee,
                token: Address::ZERO,
                amount: U256::from(5),
                purpose: B256::ZERO,
                timestamp: 1,
            },
            session_key: Some(SESSION_KEY),
        }
    }

    fn feedback(block: u64, client: Address, index: u64, value: i128, proof: &Paid) -> LogRow {
        row(
            block,
            "NewFeedback",
            json!({
                "agentId": "0", "clientAddress": client.to_checksum(None), "feedbackIndex": index,
                "value": value.to_string(), "valueDecimals": 0, "tag1": "", "tag2": "",
                "endpoint": "", "feedbackURI": "",
                "feedbackHash": hex::encode_prefixed(receipt_commitment(&proof.receipt)),
            }),
        )
    }

    #[test]
    fn only_feedback_backed_by_a_payment_to_the_agent_counts() {
        let id = identity();
        assert_eq!(
            id.payees(),
            [OWNER, WALLET, NEXT_OWNER].into_iter().collect()
        );
        let to_wallet = paid("1", PAYER, WALLET);
        let to_stranger = paid("2", PAYER, Address::repeat_byte(0x99));
        let owner_pays = paid("3", OWNER, WALLET);
        let by_key = paid("4", PAYER, OWNER);
        let mut revoked = paid("5", PAYER, WALLET);
        revoked.receipt.amount = U256::from(6);
        let rows = [
            feedback(3, PAYER, 1, 80, &to_wallet),
            feedback(4, PAYER, 2, 10, &to_stranger),
            feedback(5, OWNER, 1, 100, &owner_pays),
            feedback(6, SESSION_KEY, 1, 90, &by_key),
            feedback(7, PAYER, 3, 1, &revoked),
            row(
                8,
                "FeedbackRevoked",
                json!({"agentId": "0", "clientAddress": PAYER.to_checksum(None), "feedbackIndex": 3}),
            ),
            row(
                8,
                "ResponseAppended",
                json!({"agentId": "0", "clientAddress": PAYER.to_checksum(None), "feedbackIndex": 1}),
            ),
        ];
        let receipts = [to_wallet, to_stranger, owner_pays, by_key, revoked];
        let p = fold(&Metrics::default(), "0", &id, &rows, &receipts);
        let reasons: Vec<_> = p
            .reputation
            .feedback
            .iter()
            .map(|f| f.not_counted)
            .collect();
        assert_eq!(
            reasons,
            [
                None,
                Some("not_paid_to_agent"),
                Some("owner_paid"),
                None,
                Some("revoked")
            ]
        );
        // (80 + 90) / 2, from the payer and its session key.
        assert_eq!((p.reputation.count, p.reputation.value.as_str()), (2, "85"));
        assert_eq!(p.reputation.feedback[0].responses, 1);
        assert_eq!(p.owner, NEXT_OWNER.to_checksum(None));
        assert_eq!(p.owners.len(), 2);
    }
}
