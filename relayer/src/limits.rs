//! What a sandbox may still spend (`GET /v1/limits`): its session's terms and the wallet's state
//! now, in the token's units and in base units, and the counterparties its allowlist names.
//!
//! The registry cannot enumerate a list, so its entries are found from its `EntrySet` and
//! `EntryRemoved` events (the list id is an indexed topic) since the registry's deployment, and
//! each counterparty found is then read from the registry itself (`getEntry`, and for a pinned
//! reference `isAllowed` with it), which is the truth at the latest block. Who may change a
//! list is read the same way: its owner, and the admins its `ListAdminSet` events name that
//! `isAdmin` still confirms.

use std::collections::BTreeSet;

use alloy_primitives::{Address, B256, U256};
use alloy_sol_types::SolEvent;
use bursar_bindings::counterparty::ICounterpartyRegistry;
use bursar_bindings::evm::IFiatToken;
use bursar_client::rpc::LogBlocks;
use serde::Serialize;
use utoipa::ToSchema;

use bursar_agent::money::format_units;

use crate::kernel::json::{schema, session_id_text, Amount};
use crate::kernel::session::{parse_id, terms_of};
use crate::kernel::{App, Error};
use crate::sessions::{chain_state, ChainStatus};
use crate::store::SessionRow;

/// An amount in base units and as a person reads it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct Money {
    /// Base units (decimal string).
    pub amount: Amount,
    /// In the token's units with its symbol: `1.50 USDC`.
    pub display: String,
}

/// The token of a session's deposit.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct TokenInfo {
    /// Its address (EIP-55).
    #[schema(value_type = schema::Address)]
    pub address: String,
    /// Its symbol (`USDC`).
    pub symbol: String,
    /// Its decimals (6 for USDC).
    pub decimals: u8,
}

impl TokenInfo {
    /// `amount` (base units) in this token.
    pub fn money(&self, amount: U256) -> Money {
        Money {
            amount: Amount(amount),
            display: format!("{} {}", format_units(amount, self.decimals), self.symbol),
        }
    }
}

/// The session's budget period.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Period {
    /// Its length (seconds).
    pub seconds: u64,
    /// What may be spent per period.
    pub budget: Money,
    /// Spent in this one.
    pub spent: Money,
    /// What may still be spent in this one.
    pub remaining: Money,
    /// When the next one starts and the budget refills (unix seconds).
    pub refills_at: u64,
}

/// A counterparty the session may pay.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Counterparty {
    /// Its address (EIP-55).
    #[schema(value_type = schema::Address)]
    pub address: String,
    /// The list's label for it: text when it is text, else 0x-hex; null without one.
    pub label: Option<String>,
    /// The largest single payment to it; null: only the session's own cap.
    pub max_per_payment: Option<Money>,
}

/// What a sandbox may still spend, and under which rules.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// The session (0x and 64 hex digits).
    pub session_id: String,
    /// The wallet's status of it.
    pub status: ChainStatus,
    /// Whether it can pay now (active, started, unexpired, lease current).
    pub can_pay: bool,
    /// The deposit's token.
    pub token: TokenInfo,
    /// What may still be paid from the deposit (payments held for the owner are set aside).
    pub remaining_deposit: Money,
    /// The budget period; null without a budget.
    pub period: Option<Period>,
    /// The largest single payment; null: no cap.
    pub per_payment_cap: Option<Money>,
    /// Payments above this wait for the owner's approval; null: none do.
    pub co_sign_threshold: Option<Money>,
    /// The counterparties the allowlist lets it pay (no one else can be paid).
    pub counterparties: Vec<Counterparty>,
    /// The session's allowlist (the CounterpartyRegistry's list id).
    pub allowlist_id: Amount,
    /// When the session's allowlist is pinned (unix seconds): counterparties added after it
    /// are not payable. Null: the list is live.
    pub allowlist_pinned_at: Option<u64>,
    /// Payments start at this time (unix seconds).
    pub valid_after: u64,
    /// Payments end at this time (unix seconds).
    pub expires_at: u64,
    /// The lease, renewed while the sandbox heart-beats; null without one.
    pub lease: Option<Lease>,
    /// The x402 `batch-settlement` channels it pays into.
    pub x402_channels: Vec<X402Channel>,
}

/// An x402 `batch-settlement` channel the session pays into (`POST /v1/x402/pay`).
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct X402Channel {
    /// Its id in x402's escrow.
    pub channel_id: String,
    /// Who it pays (EIP-55).
    pub receiver: String,
    /// Deposited into it (reserved and not released), counted as spent from the session.
    pub deposited: Money,
    /// Vouched for so far: what the receiver may claim in all.
    pub vouched: Money,
    /// Deposited and not vouched for: what the next calls spend, or what comes back to the
    /// session when the server refunds.
    pub unvouched: Money,
}

/// A session's lease.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Lease {
    /// Its length (seconds).
    pub seconds: u64,
    /// When it runs out unless renewed (unix seconds).
    pub expires_at: u64,
}

/// `session`'s limits now.
pub async fn limits(app: &App, session: &SessionRow) -> Result<Limits, Error> {
    let terms = terms_of(session)?;
    let id = parse_id(&session.id)?;
    let channels = async { Ok::<_, Error>(app.store.channels_of(&session.id).await?) };
    let (state, token, counterparties, channels) = tokio::try_join!(
        chain_state(app, id),
        token_info(app, terms.token),
        counterparties_of(app, terms.allowlistId),
        channels,
    )?;
    let x402_channels = channels
        .into_iter()
        .map(|c| X402Channel {
            channel_id: c.channel_id.to_string(),
            receiver: c.receiver.to_checksum(None),
            deposited: token.money(c.deposited),
            vouched: token.money(c.signed),
            unvouched: token.money(c.deposited.saturating_sub(c.signed)),
        })
        .collect();
    let counterparties = show(counterparties, &token);
    let (list_id, pinned_at) = allowlist(terms.allowlistId);
    let positive = |amount: U256| (!amount.is_zero()).then(|| token.money(amount));
    let period = (terms.periodSeconds != 0 && !terms.periodBudget.is_zero()).then(|| Period {
        seconds: terms.periodSeconds,
        budget: token.money(terms.periodBudget),
        spent: token.money(state.period_spent.0),
        remaining: token.money(state.remaining_period_budget.0),
        refills_at: state.period_start.saturating_add(terms.periodSeconds),
    });
    Ok(Limits {
        session_id: session_id_text(id),
        status: state.status,
        can_pay: state.can_pay,
        remaining_deposit: token.money(state.remaining_deposit.0),
        period,
        per_payment_cap: positive(terms.perPaymentCap),
        co_sign_threshold: positive(terms.coSignThreshold),
        counterparties,
        allowlist_id: Amount(list_id),
        allowlist_pinned_at: pinned_at,
        valid_after: terms.validAfter,
        expires_at: terms.expiresAt,
        lease: (terms.leaseSeconds != 0).then_some(Lease {
            seconds: terms.leaseSeconds,
            expires_at: state.lease_expires_at,
        }),
        x402_channels,
        token,
    })
}

/// The token's symbol and decimals, as it reports them (`?` and 18 when it does not).
pub async fn token_info(app: &App, token: Address) -> Result<TokenInfo, Error> {
    let (symbol, decimals) = tokio::join!(
        app.client.view(None, token, IFiatToken::symbolCall {}),
        app.client.view(None, token, IFiatToken::decimalsCall {}),
    );
    Ok(TokenInfo {
        address: token.to_checksum(None),
        symbol: symbol.unwrap_or_else(|_| "?".into()),
        decimals: decimals.unwrap_or(18),
    })
}

/// Allowlist entries as people read them: labels as text, caps in `token`'s units.
pub fn show(entries: Vec<(Address, U256, B256)>, token: &TokenInfo) -> Vec<Counterparty> {
    entries
        .into_iter()
        .map(|(address, cap, label)| Counterparty {
            address: address.to_checksum(None),
            label: label_text(label),
            max_per_payment: (!cap.is_zero()).then(|| token.money(cap)),
        })
        .collect()
}

/// A session's allowlist reference, as the wallet reads it: the list's id (its low 64 bits) and
/// the time it is pinned at (the next 32; `None`: live).
pub fn allowlist(reference: U256) -> (U256, Option<u64>) {
    let [id, pinned_at, _, _] = reference.into_limbs();
    (U256::from(id), (pinned_at != 0).then_some(pinned_at))
}

/// The accounts named in `topic` position 2 of list `list`'s events of kinds `events`, first
/// seen first, since the registry's deployment.
async fn named_in(app: &App, list: U256, events: Vec<B256>) -> Result<Vec<Address>, Error> {
    let topics = [events, vec![B256::from(list)]];
    let head = app.client.block_number().await?;
    let from = app.contracts.counterparties_since;
    let logs = app
        .client
        .logs_matching(
            &[app.contracts.counterparties],
            &topics,
            LogBlocks::Range(from, head),
        )
        .await?;
    let mut seen = BTreeSet::new();
    Ok(logs
        .iter()
        .filter_map(|log| log.topics.get(2))
        .map(|topic| Address::from_word(*topic))
        .filter(|a| seen.insert(*a))
        .collect())
}

/// The entries of allowlist reference `reference` now: (counterparty, max per payment, label)
/// of each one a payment may go to, in the order they were first set. A pinned reference
/// leaves out what was added, or widened, after its time.
pub async fn counterparties_of(
    app: &App,
    reference: U256,
) -> Result<Vec<(Address, U256, B256)>, Error> {
    let registry = app.contracts.counterparties;
    let (list, pinned_at) = allowlist(reference);
    let events = vec![
        ICounterpartyRegistry::EntrySet::SIGNATURE_HASH,
        ICounterpartyRegistry::EntryRemoved::SIGNATURE_HASH,
    ];
    let mut entries = Vec::new();
    for counterparty in named_in(app, list, events).await? {
        let call = ICounterpartyRegistry::getEntryCall {
            listId: list,
            counterparty,
        };
        let entry = app.client.view(None, registry, call).await?;
        // (exists, allowed, maxPerPayment, label)
        if !(entry._0 && entry._1) {
            continue;
        }
        if pinned_at.is_some() {
            let counts = ICounterpartyRegistry::isAllowedCall {
                listId: reference,
                counterparty,
                amount: U256::ZERO,
            };
            if !app.client.view(None, registry, counts).await? {
                continue;
            }
        }
        entries.push((counterparty, entry._2, entry._3));
    }
    Ok(entries)
}

/// Who can change list `list`'s entries now: its owner, then its admins.
pub async fn editors_of(app: &App, list: U256) -> Result<Vec<Address>, Error> {
    let registry = app.contracts.counterparties;
    let owner = app
        .client
        .view(
            None,
            registry,
            ICounterpartyRegistry::listOwnerCall { listId: list },
        )
        .await?;
    let mut editors = vec![owner];
    let events = vec![ICounterpartyRegistry::ListAdminSet::SIGNATURE_HASH];
    for admin in named_in(app, list, events).await? {
        let call = ICounterpartyRegistry::isAdminCall {
            listId: list,
            account: admin,
        };
        if admin != owner && app.client.view(None, registry, call).await? {
            editors.push(admin);
        }
    }
    Ok(editors)
}

/// A label as text when it is printable ASCII padded with zeros; else 0x-hex; none when zero.
pub(crate) fn label_text(label: B256) -> Option<String> {
    if label.is_zero() {
        return None;
    }
    let bytes = label.as_slice();
    let end = bytes.iter().rposition(|b| *b != 0).map_or(0, |i| i + 1);
    let text = &bytes[..end];
    if text.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
        Some(String::from_utf8_lossy(text).into_owned())
    } else {
        Some(label.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_text_when_they_are_text() {
        let mut word = [0u8; 32];
        word[..9].copy_from_slice(b"model-api");
        assert_eq!(label_text(B256::from(word)).as_deref(), Some("model-api"));
        assert_eq!(label_text(B256::ZERO), None);
        let hash = B256::repeat_byte(0xab);
        assert_eq!(label_text(hash), Some(hash.to_string()));
    }
}
