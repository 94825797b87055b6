//! A session's audit trail, read back from chain logs alone: every event of the wallet for the
//! session, the receipts and provenance the registry recorded for it (and their
//! acknowledgements and revocations), changes to its allowlist, and the token movements in the
//! same transactions — in chain order.

use std::collections::BTreeSet;
use std::fmt;

use alloy_primitives::{Address, B256, U256};
use alloy_sol_types::SolEventInterface;
use bursar_bindings::counterparty::ICounterpartyRegistry::ICounterpartyRegistryEvents as ListEvent;
use bursar_bindings::evm::IFiatToken::IFiatTokenEvents as TokenEvent;
use bursar_bindings::receipts::IReceiptRegistry::IReceiptRegistryEvents as RegistryEvent;
use bursar_bindings::wallet::ISessionWallet::ISessionWalletEvents as WalletEvent;
use bursar_client::ids::session_id_text;
use bursar_client::rpc::{Client, RpcError, RpcLog};

use crate::contracts::Contracts;
use crate::money::format_usd;

/// One decoded event of the trail.
#[derive(Clone, Debug)]
pub struct AuditEntry {
    /// The block it was logged in.
    pub block: u64,
    /// The transaction that logged it.
    pub tx: B256,
    /// Its index in the block's logs.
    pub log_index: u64,
    /// What happened.
    pub event: AuditEvent,
}

/// An event of one of the session's contracts, decoded through the bindings.
#[derive(Clone, Debug)]
pub enum AuditEvent {
    /// From the SessionWallet.
    Wallet(WalletEvent),
    /// From the ReceiptRegistry.
    Registry(RegistryEvent),
    /// From the CounterpartyRegistry.
    List(ListEvent),
    /// From the session's token.
    Token(TokenEvent),
}

impl AuditEvent {
    /// The event's name (`PaymentExecuted`).
    pub fn name(&self) -> String {
        let debug = format!("{self:?}");
        // `Wallet(PaymentExecuted(PaymentExecuted { .. }))` → `PaymentExecuted`
        debug
            .split(['(', ' ', '{'])
            .nth(1)
            .unwrap_or_default()
            .to_string()
    }
}

/// Reads the trail of `session_id` from block `from` on.
pub async fn trail(
    client: &Client,
    contracts: &Contracts,
    session_id: U256,
    from: u64,
) -> Result<Vec<AuditEntry>, RpcError> {
    let logs = client.logs(&contracts.all(), from, None).await?;
    let decoded: Vec<(RpcLog, AuditEvent)> = logs
        .into_iter()
        .filter(|l| !l.removed)
        .filter_map(|l| decode(contracts, &l).map(|e| (l, e)))
        .collect();

    // What belongs to the session: found from its own events first.
    let mut list_id = None;
    let mut receipts = BTreeSet::new();
    let mut records = BTreeSet::new();
    for (_, e) in &decoded {
        match e {
            AuditEvent::Wallet(WalletEvent::SessionOpened(o)) if o.sessionId == session_id => {
                list_id = Some(o.allowlistId)
            }
            AuditEvent::Registry(RegistryEvent::ReceiptRecorded(r))
                if r.sessionId == session_id =>
            {
                receipts.insert(r.receiptId);
            }
            AuditEvent::Registry(RegistryEvent::ProvenanceRecorded(p))
                if p.sessionId == session_id =>
            {
                records.insert(p.recordId);
            }
            _ => {}
        }
    }
    let belongs = |e: &AuditEvent| match e {
        AuditEvent::Wallet(w) => wallet_session(w) == Some(session_id),
        AuditEvent::Registry(RegistryEvent::ReceiptRecorded(r)) => r.sessionId == session_id,
        AuditEvent::Registry(RegistryEvent::ReceiptAcknowledged(a)) => {
            receipts.contains(&a.receiptId)
        }
        AuditEvent::Registry(RegistryEvent::ProvenanceRecorded(p)) => p.sessionId == session_id,
        AuditEvent::Registry(RegistryEvent::ProvenanceRevoked(r)) => records.contains(&r.recordId),
        AuditEvent::Registry(RegistryEvent::ReceiptFeedbackGiven(g)) => {
            receipts.contains(&g.receiptId)
        }
        AuditEvent::Registry(RegistryEvent::ReceiptFeedbackRevoked(r)) => {
            receipts.contains(&r.receiptId)
        }
        AuditEvent::List(l) => list_of(l).is_some() && list_of(l) == list_id,
        _ => false,
    };
    let session_txs: BTreeSet<B256> = decoded
        .iter()
        .filter(|(_, e)| belongs(e))
        .map(|(l, _)| l.transaction_hash)
        .collect();
    Ok(decoded
        .into_iter()
        .filter(|(l, e)| {
            belongs(e)
                || (matches!(e, AuditEvent::Token(_)) && session_txs.contains(&l.transaction_hash))
        })
        .map(|(l, event)| AuditEntry {
            block: l.block_number.to(),
            tx: l.transaction_hash,
            log_index: l.log_index.to(),
            event,
        })
        .collect())
}

fn decode(contracts: &Contracts, l: &RpcLog) -> Option<AuditEvent> {
    decode_parts(contracts, l.address, &l.topics, &l.data)
}

fn decode_parts(
    contracts: &Contracts,
    address: Address,
    topics: &[B256],
    data: &[u8],
) -> Option<AuditEvent> {
    if address == contracts.wallet {
        WalletEvent::decode_raw_log(topics, data)
            .ok()
            .map(AuditEvent::Wallet)
    } else if address == contracts.receipts {
        RegistryEvent::decode_raw_log(topics, data)
            .ok()
            .map(AuditEvent::Registry)
    } else if address == contracts.counterparties {
        ListEvent::decode_raw_log(topics, data)
            .ok()
            .map(AuditEvent::List)
    } else if address == contracts.token {
        TokenEvent::decode_raw_log(topics, data)
            .ok()
            .map(AuditEvent::Token)
    } else {
        None
    }
}

/// The session's trail as the indexer at `indexer` (its base URL) serves it —
/// `GET /v1/sessions/{id}/timeline`, every page — each event decoded from the raw log the API
/// returns with it. It holds the wallet's and the receipt registry's events of the session and
/// the token transfers and approvals of its transactions; allowlist changes are not attributed
/// to sessions there.
pub async fn indexed_trail(
    indexer: &str,
    contracts: &Contracts,
    session_id: U256,
) -> Result<Vec<AuditEntry>, String> {
    let http = reqwest::Client::new();
    let mut out = Vec::new();
    let mut cursor = String::new();
    loop {
        let id = session_id_text(session_id);
        let url = format!("{indexer}/v1/sessions/{id}/timeline?limit=1000{cursor}");
        let page: serde_json::Value = http
            .get(&url)
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .map_err(|e| format!("the indexer: {e}"))?
            .json()
            .await
            .map_err(|e| format!("the indexer's answer: {e}"))?;
        for e in page["events"].as_array().into_iter().flatten() {
            let field = |name: &str| {
                e[name]
                    .as_str()
                    .ok_or_else(|| format!("the indexer's event lacks {name}: {e}"))
            };
            let bad = |what: &str| format!("the indexer's event has a bad {what}: {e}");
            let address: Address = field("address")?.parse().map_err(|_| bad("address"))?;
            let topics: Vec<B256> = e["topics"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| t.as_str().and_then(|t| t.parse().ok()))
                .collect::<Option<_>>()
                .ok_or_else(|| bad("topic"))?;
            let data: alloy_primitives::Bytes = field("data")?.parse().map_err(|_| bad("data"))?;
            let event = decode_parts(contracts, address, &topics, &data)
                .ok_or_else(|| bad("log (it does not decode)"))?;
            out.push(AuditEntry {
                block: e["blockNumber"]
                    .as_u64()
                    .ok_or_else(|| bad("blockNumber"))?,
                tx: field("txHash")?.parse().map_err(|_| bad("txHash"))?,
                log_index: e["logIndex"].as_u64().ok_or_else(|| bad("logIndex"))?,
                event,
            });
        }
        match page["nextCursor"].as_str() {
            Some(c) => cursor = format!("&cursor={c}"),
            None => return Ok(out),
        }
    }
}

/// Whether an entry is one the indexer attributes to its session (the wallet's and the
/// receipt registry's events).
pub fn indexed_kind(e: &AuditEntry) -> bool {
    matches!(
        e.event,
        AuditEvent::Wallet(_)
            | AuditEvent::Registry(_)
            | AuditEvent::Token(TokenEvent::Transfer(_) | TokenEvent::Approval(_))
    )
}

/// The session a wallet event is about (`RefundClaimed` is about an owner's balance).
fn wallet_session(e: &WalletEvent) -> Option<U256> {
    Some(match e {
        WalletEvent::SessionOpened(e) => e.sessionId,
        WalletEvent::SessionToppedUp(e) => e.sessionId,
        WalletEvent::PaymentExecuted(e) => e.sessionId,
        WalletEvent::PaymentPending(e) => e.sessionId,
        WalletEvent::PaymentFailed(e) => e.sessionId,
        WalletEvent::PaymentApproved(e) => e.sessionId,
        WalletEvent::PaymentRejected(e) => e.sessionId,
        WalletEvent::SessionRevoked(e) => e.sessionId,
        WalletEvent::SessionClosed(e) => e.sessionId,
        WalletEvent::LeaseRenewed(e) => e.sessionId,
        WalletEvent::RefundDeferred(e) => e.sessionId,
        WalletEvent::PaymentReserved(e) => e.sessionId,
        WalletEvent::ReservationReleased(e) => e.sessionId,
        WalletEvent::DepositConfirmed(e) => e.sessionId,
        WalletEvent::ChannelCredited(e) => e.sessionId,
        WalletEvent::RefundClaimed(_) => return None,
    })
}

/// The list a registry event is about (`WalletBound` is about the registry).
fn list_of(e: &ListEvent) -> Option<U256> {
    Some(match e {
        ListEvent::ListCreated(e) => e.listId,
        ListEvent::ListOwnershipTransferred(e) => e.listId,
        ListEvent::ListAdminSet(e) => e.listId,
        ListEvent::EntrySet(e) => e.listId,
        ListEvent::EntryRemoved(e) => e.listId,
        ListEvent::WalletBound(_) => return None,
    })
}

fn short_hash(h: &B256) -> String {
    let s = h.to_string();
    format!("{}…{}", &s[..6], &s[s.len() - 4..])
}

fn short(a: &Address) -> String {
    let s = a.to_string();
    format!("{}…{}", &s[..6], &s[s.len() - 4..])
}

/// A session id (a 32-byte hash of its owner and nonce) as `0x1234…abcd`.
pub fn session_label(id: U256) -> String {
    let s = session_id_text(id);
    format!("{}…{}", &s[..6], &s[s.len() - 4..])
}

fn text(b: &B256) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(32);
    match std::str::from_utf8(&b[..end]) {
        Ok(s) if end > 0 && s.chars().all(|c| !c.is_control()) => format!("{s:?}"),
        _ => b.to_string(),
    }
}

impl fmt::Display for AuditEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tx = self.tx.to_string();
        write!(f, "block {:>3}  tx {}…  ", self.block, &tx[..10])?;
        match &self.event {
            AuditEvent::Wallet(w) => match w {
                WalletEvent::SessionOpened(e) => write!(
                    f,
                    "SessionOpened       {} owner {} key {} guardian {} deposit {} cap {} budget {}/{}s co-sign > {} list #{}",
                    session_label(e.sessionId), short(&e.owner), short(&e.sessionKey), short(&e.guardian),
                    format_usd(e.deposit), format_usd(e.perPaymentCap), format_usd(e.periodBudget),
                    e.periodSeconds, format_usd(e.coSignThreshold), e.allowlistId
                ),
                WalletEvent::SessionToppedUp(e) => write!(
                    f, "SessionToppedUp     +{} by {} (deposit {})",
                    format_usd(e.amount), short(&e.from), format_usd(e.deposit)
                ),
                WalletEvent::PaymentExecuted(e) => write!(
                    f, "PaymentExecuted     {} to {} for {} (receipt #{}, nonce {})",
                    format_usd(e.amount), short(&e.to), text(&e.purpose), e.receiptId, e.nonce
                ),
                WalletEvent::PaymentPending(e) => write!(
                    f, "PaymentPending      {} to {} for {} (pending #{}, expires {})",
                    format_usd(e.amount), short(&e.to), text(&e.purpose), e.pendingId, e.expiresAt
                ),
                WalletEvent::PaymentFailed(e) => write!(
                    f, "PaymentFailed       nonce {} refused: {}",
                    e.nonce, bursar_client::revert::describe(&e.reason)
                ),
                WalletEvent::PaymentApproved(e) => {
                    write!(f, "PaymentApproved     pending #{} by {}", e.pendingId, short(&e.by))
                }
                WalletEvent::PaymentRejected(e) => {
                    write!(f, "PaymentRejected     pending #{} by {}", e.pendingId, short(&e.by))
                }
                WalletEvent::SessionRevoked(e) => {
                    write!(f, "SessionRevoked      by {}", short(&e.by))
                }
                WalletEvent::SessionClosed(e) => write!(
                    f, "SessionClosed       by {}: spent {}, refund {}",
                    short(&e.by), format_usd(e.spent), format_usd(e.refund)
                ),
                WalletEvent::LeaseRenewed(e) => {
                    write!(f, "LeaseRenewed        until {}", e.leaseExpiresAt)
                }
                WalletEvent::RefundDeferred(e) => write!(
                    f, "RefundDeferred      {} owed to {} (claim with claim())",
                    format_usd(e.amount), short(&e.owner)
                ),
                WalletEvent::RefundClaimed(e) => write!(
                    f, "RefundClaimed       {} by {} to {}",
                    format_usd(e.amount), short(&e.owner), short(&e.to)
                ),
                WalletEvent::PaymentReserved(e) => write!(
                    f, "PaymentReserved     {} to {} for {} (receipt #{}, settle before {})",
                    format_usd(e.amount), short(&e.to), text(&e.purpose), e.receiptId, e.validBefore
                ),
                WalletEvent::ReservationReleased(e) => write!(
                    f, "ReservationReleased {} unused (receipt #{})",
                    format_usd(e.amount), e.receiptId
                ),
                WalletEvent::DepositConfirmed(e) => write!(
                    f, "DepositConfirmed    {} into x402 channel {} ({} in all)",
                    format_usd(e.amount), short_hash(&e.channelId), format_usd(e.deposited)
                ),
                WalletEvent::ChannelCredited(e) => write!(
                    f, "ChannelCredited     {} back from x402 channel {} ({} in all)",
                    format_usd(e.amount), short_hash(&e.channelId), format_usd(e.credited)
                ),
            },
            AuditEvent::Registry(r) => match r {
                RegistryEvent::ReceiptRecorded(e) => write!(
                    f, "ReceiptRecorded     #{}: {} to {}",
                    e.receiptId, format_usd(e.amount), short(&e.payee)
                ),
                RegistryEvent::ReceiptAcknowledged(e) => write!(
                    f, "ReceiptAcknowledged #{} by {} (response {})",
                    e.receiptId, short(&e.payee), e.responseHash
                ),
                RegistryEvent::ProvenanceRecorded(e) => write!(
                    f, "ProvenanceRecorded  #{} subject {} attester {} parents {:?}",
                    e.recordId, e.subject, short(&e.attester), e.parents
                ),
                RegistryEvent::ProvenanceRevoked(e) => write!(
                    f, "ProvenanceRevoked   #{} by {} ({})",
                    e.recordId, short(&e.by), text(&e.reason)
                ),
                RegistryEvent::ReceiptFeedbackGiven(e) => write!(
                    f, "ReceiptFeedback     receipt #{} rates agent #{} (by the {}; feedback #{})",
                    e.receiptId, e.agentId, if e.byPayee { "payee" } else { "payer" }, e.feedbackIndex
                ),
                other => write!(f, "{}", AuditEvent::Registry(other.clone()).name()),
            },
            AuditEvent::List(l) => match l {
                ListEvent::EntrySet(e) => write!(
                    f, "EntrySet            list #{} {} allowed={} {} {}",
                    e.listId,
                    short(&e.counterparty),
                    e.allowed,
                    if e.maxPerPayment.is_zero() {
                        "no per-payment limit".to_string()
                    } else {
                        format!("max {}", format_usd(e.maxPerPayment))
                    },
                    text(&e.label)
                ),
                ListEvent::EntryRemoved(e) => write!(
                    f, "EntryRemoved        list #{} {}", e.listId, short(&e.counterparty)
                ),
                ListEvent::ListCreated(e) => {
                    write!(f, "ListCreated         #{} owner {}", e.listId, short(&e.owner))
                }
                other => write!(f, "{}", AuditEvent::List(other.clone()).name()),
            },
            AuditEvent::Token(t) => match t {
                TokenEvent::Transfer(e) => write!(
                    f, "  token Transfer    {} {} → {}",
                    format_usd(e.value), short(&e.from), short(&e.to)
                ),
                TokenEvent::Approval(e) => write!(
                    f, "  token Approval    {} may pull {} from {}",
                    short(&e.spender), format_usd(e.value), short(&e.owner)
                ),
                other => write!(f, "  token {}", AuditEvent::Token(other.clone()).name()),
            },
        }
    }
}
