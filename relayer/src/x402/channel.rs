//! `batch-settlement` as a payer: a session pays x402's payment channels. The session wallet
//! is the channel's payer and the session key its payer authorizer, so there is one channel per
//! session, receiver, receiver authorizer and withdraw delay (`wallet::x402_channel`).
//!
//! A call is a voucher for everything signed on the channel so far plus the price, which the
//! session key signs once the relayer has checked the call against the session's rules: live,
//! within the per-payment cap, below the co-sign threshold, the receiver allowed for the price.
//! When the channel holds too little for it, the call carries a deposit first: a thousand
//! calls' worth (or the server's `minDeposit`), within the cap, the co-sign threshold and the
//! deposit left, reserved on chain by the wallet under every rule of the session
//! (`reserveDeposit`: allowlist, cap, budget, a receipt) before anything is signed. So the
//! chain bounds what the receiver can ever take — the deposits, each a payment under the
//! session's rules — and the relayer bounds each call. Each call is recorded
//! (`x402_vouchers`): its receipt.
//!
//! [`settle_deposits`] (the `x402_channels` job) follows the deposits: confirmed into their
//! channel once the token used them, released once they lapsed unused, and the session
//! credited with what its channels gave back (refunds, withdrawals).

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use alloy_sol_types::{SolCall, SolValue};
use bursar_bindings::counterparty::ICounterpartyRegistry;
use bursar_bindings::evm::IFiatToken;
use bursar_bindings::wallet::{x402_channel, x402_deposit_salt, ISessionWallet};
use bursar_bindings::x402::{self, ChannelConfig, IX402BatchSettlement, BATCH_SETTLEMENT};
use serde_json::{json, Value};

use super::payment::{asked, next_intent_nonce, paid, reserve, token_digest, Paid};
use super::types::{PaymentRequired, Requirements};
use crate::kernel::App;
use crate::kernel::Error;
use crate::store::{now_ms, ChannelRow, DepositRow, DepositStatus, SessionRow, VoucherRow};

/// A deposit is this many calls' worth (within the session's limits), unless the server asks
/// for more (`minDeposit`): a channel then takes a handful of transactions however many calls
/// it pays, and what is not spent comes back when the server refunds.
const CALLS_PER_DEPOSIT: u64 = 1_000;

/// How many times a call retries when another call on the same channel moved it first.
const ATTEMPTS: usize = 8;

/// The channel terms a `batch-settlement` option asks for.
struct Asked {
    receiver: Address,
    authorizer: Address,
    withdraw_delay: u64,
    price: U256,
    min_deposit: U256,
    purpose: B256,
    /// `maxTimeoutSeconds`.
    timeout: u64,
}

fn asked_channel(url: &str, r: &Requirements) -> Result<Asked, Error> {
    let (receiver, price, purpose) = asked(url, r)?;
    let extra = r.extra.as_ref();
    let invalid = |what: &str| Error::invalid("paymentRequired.accepts.extra", what.to_owned());
    let authorizer = extra
        .and_then(|e| e.get("receiverAuthorizer"))
        .and_then(Value::as_str)
        .and_then(|a| a.parse().ok())
        .ok_or_else(|| invalid("batch-settlement needs extra.receiverAuthorizer"))?;
    let withdraw_delay = extra
        .and_then(|e| e.get("withdrawDelay"))
        .map_or(Some(900), Value::as_u64)
        .filter(|d| x402::WITHDRAW_DELAY_RANGE.contains(d))
        .ok_or_else(|| invalid("extra.withdrawDelay is outside 900 s to 30 days"))?;
    let min_deposit = extra
        .and_then(|e| e.get("minDeposit"))
        .and_then(Value::as_str)
        .and_then(|m| U256::from_str_radix(m, 10).ok())
        .unwrap_or_default();
    Ok(Asked {
        receiver,
        authorizer,
        withdraw_delay,
        price,
        min_deposit,
        purpose,
        timeout: r.max_timeout_seconds,
    })
}

/// Pays one call of a `batch-settlement` option from `session`: a voucher, with a deposit
/// reserved first when the channel holds too little.
pub(super) async fn pay_channel(
    app: &App,
    session: &SessionRow,
    (id, token): (U256, Address),
    required: PaymentRequired,
    accepted: Requirements,
) -> Result<Paid, Error> {
    let a = asked_channel(&required.resource.url, &accepted)?;
    let key = crate::payments::custodial_key(app, session, "sign x402 vouchers itself").await?;
    let terms = crate::kernel::session::terms_of(session)?;
    check_call(app, session, id, &terms, &a).await?;
    let wallet = app.contracts.wallet;
    let config = x402_channel(
        wallet,
        key.address(),
        token,
        id,
        a.receiver,
        a.authorizer,
        a.withdraw_delay,
    );
    let channel_id = x402::channel_id(&config, app.chain_id);
    let row = ChannelRow {
        channel_id,
        session_id: session.id.clone(),
        receiver: a.receiver,
        receiver_authorizer: a.authorizer,
        withdraw_delay: a.withdraw_delay,
        deposited: U256::ZERO,
        signed: U256::ZERO,
    };
    app.store.open_channel(&row, now_ms()).await?;
    // A deposit reserved for this call goes with its voucher, even when another call on the
    // channel signed first and this one tries again.
    let mut deposit = None;
    for _ in 0..ATTEMPTS {
        let current = app
            .store
            .channel(channel_id)
            .await?
            .ok_or(Error::Internal)?;
        let cumulative = current.signed + a.price;
        if deposit.is_none() && cumulative > current.deposited {
            let reserved = reserve_deposit(app, session, id, &terms, &a, &current, cumulative);
            deposit = Some(reserved.await?);
        }
        let voucher = VoucherRow {
            cumulative,
            amount: a.price,
            resource: required.resource.url.clone(),
            purpose: a.purpose,
        };
        if !app
            .store
            .add_voucher(channel_id, current.signed, &voucher, now_ms())
            .await?
        {
            // Another call on the channel signed first (its deposit, if any, stays counted).
            continue;
        }
        let ceiling: u128 = cumulative.try_into().map_err(|_| Error::Internal)?;
        let digest = x402::voucher_digest(channel_id, ceiling, app.chain_id);
        let signature: Bytes = key.sign_hash_rsv(&digest).into();
        let mut payload = json!({
            "type": if deposit.is_some() { "deposit" } else { "voucher" },
            "channelConfig": config_json(&config),
            "voucher": {
                "channelId": channel_id,
                "maxClaimableAmount": cumulative.to_string(),
                "signature": signature,
            },
        });
        if let Some(d) = deposit {
            payload["deposit"] = d;
        }
        tracing::info!(session = %session.id, channel = %channel_id, %cumulative, "x402 batch-settlement voucher signed");
        return paid(required, accepted, payload);
    }
    Err(Error::Unavailable)
}

/// The call against the session's rules, as the wallet would check a payment of its price:
/// the session can pay, the price is within the per-payment cap and at most the co-sign
/// threshold, and the allowlist admits the receiver for it.
async fn check_call(
    app: &App,
    session: &SessionRow,
    id: U256,
    terms: &bursar_bindings::eip712::OpenSession,
    a: &Asked,
) -> Result<(), Error> {
    let wallet = app.contracts.wallet;
    let authority = ISessionWallet::sessionAuthorityCall { sessionId: id };
    let lists = ICounterpartyRegistry::isAllowedCall {
        listId: terms.allowlistId,
        counterparty: a.receiver,
        amount: a.price,
    };
    let (authority, allowed) = tokio::try_join!(
        async {
            Ok::<_, Error>(
                app.client
                    .view(Some(session.signer), wallet, authority)
                    .await?,
            )
        },
        async {
            if terms.allowlistId.is_zero() {
                return Ok(true);
            }
            let registry = app.contracts.counterparties;
            Ok::<_, Error>(app.client.view(None, registry, lists).await?)
        },
    )?;
    if !authority._2 {
        return Err(Error::conflict(
            "x402_session_cannot_pay",
            "the session is revoked, closed, expired or its lease lapsed",
        ));
    }
    if !terms.perPaymentCap.is_zero() && a.price > terms.perPaymentCap {
        return Err(Error::conflict(
            "x402_over_payment_cap",
            format!(
                "the price {} is above the session's per-payment cap {}",
                a.price, terms.perPaymentCap
            ),
        ));
    }
    if !terms.coSignThreshold.is_zero() && a.price > terms.coSignThreshold {
        return Err(Error::conflict(
            "x402_needs_approval",
            "the price is above the session's co-sign threshold: an x402 payment cannot wait for the owner",
        ));
    }
    if !allowed {
        return Err(Error::conflict(
            "x402_counterparty_not_allowed",
            format!(
                "the session's allowlist does not admit {} for {}",
                a.receiver, a.price
            ),
        ));
    }
    Ok(())
}

/// Reserves a deposit into the channel large enough for a voucher of `cumulative`, and
/// answers the payload's `deposit` part once the reservation is mined.
async fn reserve_deposit(
    app: &App,
    session: &SessionRow,
    id: U256,
    terms: &bursar_bindings::eip712::OpenSession,
    a: &Asked,
    channel: &ChannelRow,
    cumulative: U256,
) -> Result<Value, Error> {
    let wallet = app.contracts.wallet;
    let need = cumulative - channel.deposited;
    let left = app
        .client
        .view(
            None,
            wallet,
            ISessionWallet::remainingDepositCall { sessionId: id },
        )
        .await?;
    let mut amount = (a.price * U256::from(CALLS_PER_DEPOSIT))
        .max(a.min_deposit)
        .max(need);
    for limit in [terms.perPaymentCap, terms.coSignThreshold, left] {
        if !limit.is_zero() {
            amount = amount.min(limit);
        }
    }
    if amount < need {
        return Err(Error::conflict(
            "x402_channel_deposit_too_small",
            format!("the channel needs {need} more, and the session can deposit {amount} at once"),
        ));
    }
    // Good for as long as the server waits for a payment (at least a minute: the facilitator
    // wants time to send it), never past the session's expiry.
    let ttl = a
        .timeout
        .clamp(60, app.settings.intent_ttl.as_secs().max(60));
    let valid_before = U256::from((app.now(true).await? + ttl).min(terms.expiresAt));
    // Two deposits of one resource within a second must differ: the purpose the wallet
    // derives the authorization's salt from carries the session's next intent nonce.
    let intent_nonce = next_intent_nonce(app, session).await?;
    let purpose = keccak256((a.purpose, U256::from(intent_nonce)).abi_encode());
    let token = terms.token;
    let salt = x402_deposit_salt(id, a.receiver, amount, valid_before, purpose);
    let message = x402::ReceiveWithAuthorization {
        from: wallet,
        to: x402::ERC3009_DEPOSIT_COLLECTOR,
        value: amount,
        validAfter: U256::ZERO,
        validBefore: valid_before,
        nonce: x402::erc3009_deposit_nonce(channel.channel_id, salt),
    };
    let hash_struct = alloy_sol_types::SolStruct::eip712_hash_struct(&message);
    let digest = token_digest(app, token, hash_struct).await?;
    let key = crate::payments::custodial_key(app, session, "sign x402 deposits itself").await?;
    let signature: Bytes = key.sign_hash_rsv(&digest).into();
    let call = ISessionWallet::reserveDepositCall {
        sessionId: id,
        receiver: a.receiver,
        receiverAuthorizer: a.authorizer,
        withdrawDelay: a.withdraw_delay,
        value: amount,
        validBefore: valid_before,
        purpose,
        signature: signature.clone(),
    };
    let reserved = |r: &ISessionWallet::reserveDepositReturn| r._0;
    reserve(
        app,
        session,
        call,
        reserved,
        (amount, intent_nonce),
        valid_before,
    )
    .await?;
    let row = DepositRow {
        digest,
        channel_id: channel.channel_id,
        amount,
        valid_before: valid_before.to(),
        purpose,
    };
    app.store.add_deposit(&row, now_ms()).await?;
    tracing::info!(session = %session.id, channel = %channel.channel_id, %amount, "x402 batch-settlement deposit reserved");
    Ok(json!({
        "amount": amount.to_string(),
        "authorization": {"erc3009Authorization": {
            "validAfter": "0",
            "validBefore": valid_before.to_string(),
            "salt": B256::from(salt),
            "signature": signature,
        }},
    }))
}

fn config_json(c: &ChannelConfig) -> Value {
    json!({
        "payer": c.payer,
        "payerAuthorizer": c.payerAuthorizer,
        "receiver": c.receiver,
        "receiverAuthorizer": c.receiverAuthorizer,
        "token": c.token,
        "withdrawDelay": c.withdrawDelay.to::<u64>(),
        "salt": c.salt,
    })
}

/// One pass over the sessions' channel deposits and channels: deposits the token used are
/// confirmed into their channel, lapsed unused ones released back to their session, and each
/// channel's returns credited. Answers how many transactions it queued.
pub async fn settle_deposits(app: &App) -> Result<usize, Error> {
    let wallet = app.contracts.wallet;
    let now = app.now(false).await?;
    let mut queued = 0;
    let mut touched = Vec::new();
    for d in app.store.reserved_deposits(100).await? {
        let Some(channel) = app.store.channel(d.channel_id).await? else {
            continue;
        };
        let Some(session) = app.store.session(&channel.session_id, None).await? else {
            continue;
        };
        let id = crate::kernel::session::parse_id(&session.id)?;
        let token = crate::kernel::session::terms_of(&session)?.token;
        let salt = x402_deposit_salt(
            id,
            channel.receiver,
            d.amount,
            U256::from(d.valid_before),
            d.purpose,
        );
        let nonce = x402::erc3009_deposit_nonce(channel.channel_id, salt);
        let ask = IFiatToken::authorizationStateCall {
            authorizer: wallet,
            nonce,
        };
        let used = app.client.view(None, token, ask).await?;
        let (status, data) = match (used, now >= d.valid_before) {
            (true, _) => (
                DepositStatus::Confirmed,
                deposit_call(&channel, id, &d, true),
            ),
            (false, true) => (
                DepositStatus::Released,
                deposit_call(&channel, id, &d, false),
            ),
            (false, false) => continue,
        };
        if let Err(e) = queue(app, session.signer, wallet, data).await {
            // A refusal now (the wallet already confirmed or released it) is looked at again
            // on the next pass; the row stays reserved until a call succeeds.
            tracing::warn!(deposit = %d.digest, error = %e, "an x402 deposit could not be settled");
            continue;
        }
        app.store.deposit_done(&d, status, now_ms()).await?;
        queued += 1;
        touched.push((channel, id, session.signer));
    }
    // A hundred channels a pass, the least recently looked at first.
    for channel in app.store.channels_with_returns(100).await? {
        app.store
            .touch_channel(channel.channel_id, now_ms())
            .await?;
        let Some(session) = app.store.session(&channel.session_id, None).await? else {
            continue;
        };
        let id = crate::kernel::session::parse_id(&session.id)?;
        touched.push((channel, id, session.signer));
    }
    touched.sort_by_key(|(c, ..)| c.channel_id);
    touched.dedup_by_key(|(c, ..)| c.channel_id);
    for (channel, id, signer) in touched {
        let held = app
            .client
            .view(
                None,
                BATCH_SETTLEMENT,
                IX402BatchSettlement::channelsCall {
                    channelId: channel.channel_id,
                },
            )
            .await?;
        let (deposited, credited) = {
            let r = app
                .client
                .view(
                    None,
                    wallet,
                    ISessionWallet::channelCall {
                        channelId: channel.channel_id,
                    },
                )
                .await?;
            (r._0, r._1)
        };
        if deposited.saturating_sub(U256::from(held.balance)) > credited {
            let call = ISessionWallet::creditChannelCall {
                sessionId: id,
                receiver: channel.receiver,
                receiverAuthorizer: channel.receiver_authorizer,
                withdrawDelay: channel.withdraw_delay,
            };
            queue(app, signer, wallet, call.abi_encode()).await?;
            queued += 1;
        }
    }
    Ok(queued)
}

/// `confirmDeposit` (or `releaseDeposit`) of deposit `d`.
fn deposit_call(channel: &ChannelRow, id: U256, d: &DepositRow, confirm: bool) -> Vec<u8> {
    let c = ISessionWallet::confirmDepositCall {
        sessionId: id,
        receiver: channel.receiver,
        receiverAuthorizer: channel.receiver_authorizer,
        withdrawDelay: channel.withdraw_delay,
        value: d.amount,
        validBefore: U256::from(d.valid_before),
        purpose: d.purpose,
    };
    if confirm {
        return c.abi_encode();
    }
    ISessionWallet::releaseDepositCall {
        sessionId: c.sessionId,
        receiver: c.receiver,
        receiverAuthorizer: c.receiverAuthorizer,
        withdrawDelay: c.withdrawDelay,
        value: c.value,
        validBefore: c.validBefore,
        purpose: c.purpose,
    }
    .abi_encode()
}

async fn queue(app: &App, signer: Address, to: Address, data: Vec<u8>) -> Result<i64, Error> {
    let call = crate::engine::submission::Call {
        signer,
        to,
        gas_limit: app.gas_for(signer, to, &data).await?,
        data: data.into(),
        value: U256::ZERO,
    };
    let (db, tx) = app.queue(&call).await?;
    app.commit(db).await?;
    Ok(tx)
}
