//! x402's `batch-settlement` scheme on EVM, the facilitator's side, for any payer: deposits
//! into x402's escrow (`x402BatchSettlement`, an EIP-3009 `receiveWithAuthorization` through
//! x402's collector), the vouchers a server checks, and the server's claims (many channels in
//! one transaction), settlements and cooperative refunds.
//!
//! Channels name a receiver authorizer who decides when vouchers are claimed and refunds made.
//! Here it is a key of the relayer's own ([`AUTHORIZER`], made once and sealed like session
//! keys, the same in every relayer process on the database), offered in `/x402/supported`:
//! it signs the claim batches and refunds servers ask this facilitator to settle. Checked as
//! x402's facilitator checks (`@x402/evm` 2.27), with its codes ([`rules`]), simulated at the
//! latest block, sent through the transaction engine once ([`super::once`]) and answered once
//! mined.

mod rules;
mod wire;

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use alloy_sol_types::{Eip712Domain, SolCall, SolEvent, SolInterface, SolStruct};
use bursar_bindings::evm::IFiatToken;
use bursar_bindings::x402::{
    self, ChannelConfig, ClaimBatch, ClaimEntry, IX402BatchSettlement as Escrow,
    ReceiveWithAuthorization, BATCH_SETTLEMENT, ERC3009_DEPOSIT_COLLECTOR,
};
use serde_json::{json, Value};

use self::rules::{code, Terms, Use};
use self::wire::{narrow, Payload};
use super::once::{mined, queue, signer_for, Settlement};
use super::signature::{recovers_to, signed_by};
use super::types::{network, refuse, FacilitatorRequest, Refusal, SettleResponse, VerifyResponse};
use crate::kernel::App;
use crate::kernel::Error;

/// The scheme's name.
pub const BATCH: &str = "batch-settlement";

/// The purpose of the relayer's receiver-authorizer key.
const AUTHORIZER: &str = "x402-receiver-authorizer";

/// An authorization settles only if it lives this much longer (x402's facilitator's margin).
const SETTLE_SLACK: u64 = 6;

/// ERC-6492's magic suffix: a signature for a contract that is not deployed yet.
const ERC6492_SUFFIX: [u8; 32] = [
    0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92,
    0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92,
];

fn no(what: &str, message: impl Into<String>) -> Refusal {
    refuse(&code(what), message)
}

/// The receiver authorizer this facilitator signs claims and refunds as.
async fn authorizer(app: &App) -> Result<bursar_client::Key, Error> {
    Ok(app.relayer_key(AUTHORIZER).await?)
}

/// `/x402/supported`'s `extra` for the scheme: the receiver authorizer channels name.
pub(super) async fn supported_extra(app: &App) -> Result<Value, Error> {
    let address = authorizer(app).await?.address();
    Ok(json!({ "receiverAuthorizer": address.to_string() }))
}

fn domain(app: &App) -> Eip712Domain {
    x402::batch_settlement_domain(app.chain_id)
}

/// A channel's state on chain now.
async fn state(app: &App, id: B256) -> Result<rules::State, Error> {
    let c = &app.client;
    let (channel, pending, nonce) = tokio::try_join!(
        c.view(
            None,
            BATCH_SETTLEMENT,
            Escrow::channelsCall { channelId: id }
        ),
        c.view(
            None,
            BATCH_SETTLEMENT,
            Escrow::pendingWithdrawalsCall { channelId: id }
        ),
        c.view(
            None,
            BATCH_SETTLEMENT,
            Escrow::refundNonceCall { channelId: id }
        ),
    )?;
    Ok(rules::State {
        balance: channel.balance,
        total_claimed: channel.totalClaimed,
        withdraw_requested_at: pending.initiatedAt.to(),
        refund_nonce: nonce,
    })
}

/// A payment's channel and voucher, parsed and checked against the requirements.
struct Voucher {
    config: ChannelConfig,
    id: B256,
    ceiling: u128,
    signature: Bytes,
}

impl Voucher {
    /// The voucher of a payment under `terms`: for the channel the server asked for.
    fn of(
        app: &App,
        terms: &Terms,
        config: &wire::Config,
        v: &wire::Voucher,
    ) -> Result<Voucher, Refusal> {
        let voucher = Voucher::parse(app, config, v)?;
        rules::check_channel(&voucher.config, v.channel_id, app.chain_id, terms)?;
        Ok(voucher)
    }

    /// The voucher of a channel, whatever the terms (a server's refund names none).
    fn parse(app: &App, config: &wire::Config, v: &wire::Voucher) -> Result<Voucher, Refusal> {
        let malformed = || {
            no(
                "payload_type",
                "an amount or the withdraw delay is out of range",
            )
        };
        let config = config.channel().ok_or_else(malformed)?;
        if x402::channel_id(&config, app.chain_id) != v.channel_id {
            let why = "the channel id is not its config's on this chain";
            return Err(no("channel_id_mismatch", why));
        }
        Ok(Voucher {
            config,
            id: v.channel_id,
            ceiling: narrow(v.max_claimable_amount.0).ok_or_else(malformed)?,
            signature: v.signature.clone(),
        })
    }

    /// Signed by the payer authorizer (ECDSA, as the escrow checks it) or, without one, by the
    /// payer (ECDSA or ERC-1271).
    async fn check_signature(&self, app: &App) -> Result<Result<(), Refusal>, Error> {
        let digest = x402::voucher_digest(self.id, self.ceiling, app.chain_id);
        let signed = match self.config.payerAuthorizer {
            Address::ZERO => {
                signed_by(app, self.config.payer, digest, &self.signature)
                    .await?
                    .0
            }
            authorizer => recovers_to(authorizer, digest, &self.signature),
        };
        Ok(match signed {
            true => Ok(()),
            false => Err(no(
                "voucher_signature",
                "the voucher is not signed by the payer",
            )),
        })
    }
}

/// A deposit, checked and ready to send.
struct Deposit {
    voucher: Voucher,
    amount: u128,
    call: Vec<u8>,
    /// The deposit authorization's signature: what the settlement is kept under.
    signature: Bytes,
    state: rules::State,
}

/// The payload and the requirements' terms, or why they cannot be read.
fn parse(app: &App, req: &FacilitatorRequest) -> Result<(Terms, Payload), Refusal> {
    let r = &req.payment_requirements;
    if r.network != network(app.chain_id) || req.payment_payload.accepted.network != r.network {
        return Err(no(
            "network_mismatch",
            format!("this facilitator settles on {}", network(app.chain_id)),
        ));
    }
    let terms = Terms::of(r)?;
    let payload = serde_json::from_value(req.payment_payload.payload.clone()).map_err(|e| {
        no(
            "payload_type",
            format!("not a batch-settlement payload: {e}"),
        )
    })?;
    Ok((terms, payload))
}

/// `POST /x402/verify` for `batch-settlement`: a deposit would land and cover its voucher, or
/// a voucher is the payer's and within its channel; answered with the channel's state.
pub(super) async fn verify(app: &App, req: &FacilitatorRequest) -> Result<VerifyResponse, Error> {
    let checked = match parse(app, req) {
        Err(refusal) => Err(refusal),
        Ok((
            terms,
            Payload::Deposit {
                channel_config,
                voucher,
                deposit,
            },
        )) => check_deposit(app, &terms, &channel_config, &voucher, &deposit)
            .await?
            .map(|d| (d.voucher.config.payer, d.voucher.id, d.state)),
        Ok((
            terms,
            Payload::Voucher {
                channel_config,
                voucher,
            },
        )) => check_voucher(app, &terms, &channel_config, &voucher, Use::Request).await?,
        Ok((
            terms,
            Payload::Refund {
                channel_config,
                voucher,
                ..
            },
        )) => check_voucher(app, &terms, &channel_config, &voucher, Use::Refund).await?,
        Ok(_) => Err(no(
            "payload_type",
            "verify takes a deposit, a voucher or a refund",
        )),
    };
    Ok(match checked {
        Ok((payer, id, state)) => VerifyResponse {
            extra: Some(state.extra(id)),
            ..VerifyResponse::valid(payer)
        },
        Err(refusal) => VerifyResponse::refused(refusal),
    })
}

/// A voucher against its channel on chain: `(payer, channel id, state)`.
async fn check_voucher(
    app: &App,
    terms: &Terms,
    config: &wire::Config,
    v: &wire::Voucher,
    used: Use,
) -> Result<Result<(Address, B256, rules::State), Refusal>, Error> {
    let voucher = match Voucher::of(app, terms, config, v) {
        Ok(voucher) => voucher,
        Err(refusal) => return Ok(Err(refusal)),
    };
    if let Err(refusal) = voucher.check_signature(app).await? {
        return Ok(Err(refusal));
    }
    let state = state(app, voucher.id).await?;
    Ok(rules::check_voucher(&state, voucher.ceiling, used)
        .map(|()| (voucher.config.payer, voucher.id, state)))
}

/// A deposit with its voucher: the authorization is the payer's, for this channel, live; the
/// payer holds the amount; the voucher is within what the channel will hold; and the deposit
/// simulates from the signer that would send it.
async fn check_deposit(
    app: &App,
    terms: &Terms,
    config: &wire::Config,
    v: &wire::Voucher,
    deposit: &wire::Deposit,
) -> Result<Result<Deposit, Refusal>, Error> {
    let voucher = match Voucher::of(app, terms, config, v) {
        Ok(voucher) => voucher,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let Some(auth) = &deposit.authorization.erc3009_authorization else {
        let why = match deposit.authorization.permit2_authorization {
            Some(_) => "this facilitator takes EIP-3009 deposits, not Permit2 ones",
            None => "the deposit carries no EIP-3009 authorization",
        };
        return Ok(Err(no("erc3009_authorization_required", why)));
    };
    let Some((name, version)) = terms.token_domain.clone() else {
        return Ok(Err(no(
            "missing_eip712_domain",
            "the requirements' extra must name the token's EIP-712 domain (name, version)",
        )));
    };
    let now = U256::from(app.now(true).await?);
    if auth.valid_before.0 < now + U256::from(SETTLE_SLACK) {
        return Ok(Err(no(
            "payload_authorization_valid_before",
            "the deposit authorization expires before it could be settled",
        )));
    }
    if auth.valid_after.0 > now {
        return Ok(Err(no(
            "payload_authorization_valid_after",
            "the deposit authorization is not valid yet",
        )));
    }
    let Some(amount) = narrow(deposit.amount.0) else {
        return Ok(Err(no("payload_type", "the deposit is beyond 128 bits")));
    };
    let payer = voucher.config.payer;
    let signature = match unwrap_erc6492(app, payer, &auth.signature).await? {
        Ok(signature) => signature,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let salt = U256::from_be_bytes(auth.salt.0);
    let message = ReceiveWithAuthorization {
        from: payer,
        to: ERC3009_DEPOSIT_COLLECTOR,
        value: U256::from(amount),
        validAfter: auth.valid_after.0,
        validBefore: auth.valid_before.0,
        nonce: x402::erc3009_deposit_nonce(voucher.id, salt),
    };
    let token = Eip712Domain::new(
        Some(name.into()),
        Some(version.into()),
        Some(U256::from(app.chain_id)),
        Some(terms.asset),
        None,
    );
    if !signed_by(app, payer, message.eip712_signing_hash(&token), &signature)
        .await?
        .0
    {
        return Ok(Err(no(
            "receive_authorization_signature",
            "the deposit authorization is not the payer's",
        )));
    }
    if let Err(refusal) = voucher.check_signature(app).await? {
        return Ok(Err(refusal));
    }
    let (state, held) = tokio::try_join!(state(app, voucher.id), async {
        let ask = IFiatToken::balanceOfCall { account: payer };
        Ok(app.client.view(None, terms.asset, ask).await?)
    },)?;
    if let Err(refusal) = rules::check_deposit(&state, held, amount, voucher.ceiling) {
        return Ok(Err(refusal));
    }
    let call = Escrow::depositCall {
        config: voucher.config.clone(),
        amount,
        collector: ERC3009_DEPOSIT_COLLECTOR,
        collectorData: x402::erc3009_collector_data(
            auth.valid_after.0,
            auth.valid_before.0,
            salt,
            &signature,
        )
        .into(),
    }
    .abi_encode();
    if let Err(refusal) = simulate(
        app,
        signer_for(app, payer),
        &call,
        "deposit_simulation_failed",
    )
    .await?
    {
        return Ok(Err(refusal));
    }
    Ok(Ok(Deposit {
        voucher,
        amount,
        call,
        signature,
        state,
    }))
}

/// The signature inside an ERC-6492 wrapper, for a payer that is deployed. One that is not
/// would have to be deployed by a factory, and this facilitator trusts none (as x402's, whose
/// list is empty unless configured).
async fn unwrap_erc6492(
    app: &App,
    payer: Address,
    signature: &Bytes,
) -> Result<Result<Bytes, Refusal>, Error> {
    if !signature.ends_with(&ERC6492_SUFFIX) {
        return Ok(Ok(signature.clone()));
    }
    let wrapped = &signature[..signature.len() - 32];
    type Wrapper = (Address, Bytes, Bytes);
    let Ok((_, _, inner)) = <Wrapper as alloy_sol_types::SolValue>::abi_decode_params(wrapped)
    else {
        return Ok(Err(no("payload_type", "a malformed ERC-6492 signature")));
    };
    if app.client.code(payer).await?.is_empty() {
        return Ok(Err(no(
            "eip6492_factory_not_allowed",
            "the payer is not deployed, and this facilitator deploys no wallet",
        )));
    }
    Ok(Ok(inner))
}

/// `call` to the escrow from `signer` at the latest block; a revert is refused as `what`.
async fn simulate(
    app: &App,
    signer: Address,
    call: &[u8],
    what: &str,
) -> Result<Result<(), Refusal>, Error> {
    match app
        .client
        .call(Some(signer), BATCH_SETTLEMENT, call, U256::ZERO, None)
        .await
    {
        Ok(_) => Ok(Ok(())),
        Err(e) => match e.revert_data() {
            Some(data) => {
                let said = x402::IX402BatchSettlement::IX402BatchSettlementErrors::abi_decode(data)
                    .map(|e| format!("{e:?}"))
                    .unwrap_or_else(|_| format!("reverted with {data}"));
                Ok(Err(no(what, said)))
            }
            None => Err(Error::from(e)),
        },
    }
}

/// `POST /x402/settle` for `batch-settlement`: a deposit, or a server's claim, settlement or
/// refund.
pub(super) async fn settle(app: &App, req: &FacilitatorRequest) -> Result<SettleResponse, Error> {
    let (terms, payload) = match parse(app, req) {
        Ok(parsed) => parsed,
        Err(refusal) => return Ok(SettleResponse::failed(app, refusal, None)),
    };
    match payload {
        Payload::Deposit {
            channel_config,
            voucher,
            deposit,
        } => settle_deposit(app, &terms, &channel_config, &voucher, &deposit).await,
        Payload::Claim {
            claims,
            claim_authorizer_signature,
        } => settle_claims(app, &claims, claim_authorizer_signature).await,
        Payload::Settle { receiver, token } => sweep(app, receiver, token).await,
        Payload::Refund {
            channel_config,
            voucher,
            amount,
            refund_nonce,
            claims,
            refund_authorizer_signature,
            claim_authorizer_signature,
        } => {
            let (Some(amount), Some(nonce)) = (amount, refund_nonce) else {
                let why = no(
                    "refund_payload",
                    "a refund to settle names its amount and nonce",
                );
                return Ok(SettleResponse::failed(app, why, None));
            };
            let refund = Refund {
                amount: amount.0,
                nonce: nonce.0,
                claims,
                refund_signature: refund_authorizer_signature,
                claim_signature: claim_authorizer_signature,
            };
            settle_refund(app, &channel_config, &voucher, refund).await
        }
        Payload::Voucher { .. } => {
            let why = no(
                "payload_type",
                "a voucher is settled by its server's claims",
            );
            Ok(SettleResponse::failed(app, why, None))
        }
    }
}

async fn settle_deposit(
    app: &App,
    terms: &Terms,
    config: &wire::Config,
    voucher: &wire::Voucher,
    deposit: &wire::Deposit,
) -> Result<SettleResponse, Error> {
    let d = match check_deposit(app, terms, config, voucher, deposit).await? {
        Ok(d) => d,
        Err(refusal) => {
            let payer = config.channel().map(|c| c.payer);
            return Ok(SettleResponse::failed(app, refusal, payer));
        }
    };
    let payer = d.voucher.config.payer;
    let key = format!(
        "batch-deposit:{}",
        alloy_primitives::hex::encode(keccak256(&d.signature))
    );
    let request_hash = alloy_primitives::hex::encode(keccak256(&d.call));
    let settlement = Settlement {
        key: &key,
        request_hash: &request_hash,
        used: "invalid_batch_settlement_evm_deposit_already_settled",
        payer,
    };
    let send = async {
        let tx = queue(
            app,
            &settlement,
            signer_for(app, payer),
            BATCH_SETTLEMENT,
            d.call.clone(),
        )
        .await?;
        tracing::info!(%payer, channel = %d.voucher.id, amount = d.amount, transaction = tx, "x402 batch deposit queued");
        Ok(Ok(tx))
    };
    let outcome = |tx| async move {
        let (hash, succeeded) = match mined(app, tx, Some(payer)).await? {
            Ok(mined) => mined,
            Err(pending) => return Ok(pending),
        };
        if !succeeded {
            let why = no(
                "deposit_transaction_failed",
                "the deposit was mined but reverted",
            );
            return Ok(SettleResponse {
                transaction: hash.to_string(),
                ..SettleResponse::failed(app, why, Some(payer))
            });
        }
        let after = state(app, d.voucher.id).await?;
        Ok(SettleResponse {
            amount: Some(d.amount.to_string()),
            extra: Some(json!({ "channelState": after.extra(d.voucher.id) })),
            ..SettleResponse::settled(app, payer, hash.to_string())
        })
    };
    settlement.run(app, send, outcome).await
}

/// A claim batch signed by this facilitator's receiver authorizer (every channel must name
/// it), unless the server brought the authorizer's signature.
async fn settle_claims(
    app: &App,
    claims: &[wire::Claim],
    signature: Option<Bytes>,
) -> Result<SettleResponse, Error> {
    let parsed: Option<Vec<_>> = claims.iter().map(wire::Claim::voucher_claim).collect();
    let claims = match parsed {
        Some(claims) if !claims.is_empty() => claims,
        _ => {
            let why = no(
                "payload_type",
                "a claim names one voucher or more, amounts within 128 bits",
            );
            return Ok(SettleResponse::failed(app, why, None));
        }
    };
    let receiver = claims[0].voucher.channel.receiver;
    let call = match claim_call(app, claims, signature).await? {
        Ok(call) => call,
        Err(refusal) => return Ok(SettleResponse::failed(app, refusal, None)),
    };
    let data = call.abi_encode();
    send_escrow_call(app, "batch-claim", receiver, data, "claim", |_| None).await
}

/// `claimWithSignature` of `claims`, with the authorizer's signature: the server's, or ours
/// when every channel names ours.
async fn claim_call(
    app: &App,
    claims: Vec<Escrow::VoucherClaim>,
    signature: Option<Bytes>,
) -> Result<Result<Escrow::claimWithSignatureCall, Refusal>, Error> {
    let signature = match signature {
        Some(signature) => signature,
        None => {
            let key = authorizer(app).await?;
            if claims
                .iter()
                .any(|c| c.voucher.channel.receiverAuthorizer != key.address())
            {
                return Ok(Err(no(
                    "authorizer_address_mismatch",
                    "a channel names another receiver authorizer than this facilitator's",
                )));
            }
            let batch = ClaimBatch {
                claims: claims
                    .iter()
                    .map(|c| ClaimEntry {
                        channelId: x402::channel_id(&c.voucher.channel, app.chain_id),
                        maxClaimableAmount: c.voucher.maxClaimableAmount,
                        totalClaimed: c.totalClaimed,
                    })
                    .collect(),
            };
            key.sign_hash_rsv(&batch.eip712_signing_hash(&domain(app)))
                .into()
        }
    };
    Ok(Ok(Escrow::claimWithSignatureCall {
        voucherClaims: claims,
        authorizerSignature: signature,
    }))
}

/// Sends what was claimed for `receiver` in `token` to it.
async fn sweep(app: &App, receiver: Address, token: Address) -> Result<SettleResponse, Error> {
    let totals = app
        .client
        .view(
            None,
            BATCH_SETTLEMENT,
            Escrow::receiversCall { receiver, token },
        )
        .await?;
    if totals.totalClaimed <= totals.totalSettled {
        let why = no(
            "nothing_to_settle",
            "nothing claimed for the receiver is left to send",
        );
        return Ok(SettleResponse::failed(app, why, None));
    }
    let data = Escrow::settleCall { receiver, token }.abi_encode();
    let sent = move |logs: &[bursar_client::rpc::RpcLog]| {
        logs.iter()
            .filter(|l| l.address == BATCH_SETTLEMENT)
            .filter_map(|l| Escrow::Settled::decode_raw_log(l.topics.iter().copied(), &l.data).ok())
            .find(|s| (s.receiver, s.token) == (receiver, token))
            .map(|s| s.amount.to_string())
    };
    send_escrow_call(app, "batch-settle", receiver, data, "settle", sent).await
}

/// What a refund to settle carries.
struct Refund {
    amount: U256,
    nonce: U256,
    claims: Vec<wire::Claim>,
    refund_signature: Option<Bytes>,
    claim_signature: Option<Bytes>,
}

/// A cooperative refund: the claims that come with it first (one `multicall`), then the
/// refund, signed by this facilitator's receiver authorizer unless the server signed it. A
/// server's channel manager asks it with the channel's last voucher, which must be the
/// payer's; its requirements name no channel terms (x402's manager sends none).
///
/// Like x402's own facilitator, this one cannot tell a server's refund request from anyone
/// else's: a channel naming this facilitator's receiver authorizer trusts it to refund what
/// is unclaimed when asked. A server that must decide refunds itself names its own receiver
/// authorizer and signs them (`refundAuthorizerSignature`); this facilitator then only sends.
async fn settle_refund(
    app: &App,
    config: &wire::Config,
    v: &wire::Voucher,
    refund: Refund,
) -> Result<SettleResponse, Error> {
    let voucher = match Voucher::parse(app, config, v) {
        Ok(voucher) => voucher,
        Err(refusal) => return Ok(SettleResponse::failed(app, refusal, None)),
    };
    let payer = voucher.config.payer;
    if let Err(refusal) = voucher.check_signature(app).await? {
        return Ok(SettleResponse::failed(app, refusal, Some(payer)));
    }
    let (id, channel) = (voucher.id, voucher.config);
    let before = state(app, id).await?;
    let failed =
        |what: &str, message: &str| Ok(SettleResponse::failed(app, no(what, message), Some(payer)));
    let parsed: Option<Vec<_>> = refund
        .claims
        .iter()
        .map(wire::Claim::voucher_claim)
        .collect();
    let (Some(claims), Some(amount)) = (parsed, narrow(refund.amount)) else {
        return failed("refund_payload", "an amount beyond 128 bits");
    };
    if refund.nonce != before.refund_nonce {
        return failed(
            "refund_payload",
            "the refund's nonce is not the channel's next",
        );
    }
    let claimed = claims
        .iter()
        .filter(|c| x402::channel_id(&c.voucher.channel, app.chain_id) == id)
        .map(|c| c.totalClaimed);
    if rules::refundable(&before, claimed, amount).is_none() {
        return failed(
            "refund_no_balance",
            "nothing above the claims is left to refund",
        );
    }
    let refund_signature = match refund.refund_signature {
        Some(signature) => signature,
        None => {
            let key = authorizer(app).await?;
            if channel.receiverAuthorizer != key.address() {
                return failed(
                    "authorizer_address_mismatch",
                    "the channel names another receiver authorizer than this facilitator's",
                );
            }
            let digest = x402::Refund {
                channelId: id,
                nonce: refund.nonce,
                amount,
            }
            .eip712_signing_hash(&domain(app));
            key.sign_hash_rsv(&digest).into()
        }
    };
    let refund_call = Escrow::refundWithSignatureCall {
        config: channel,
        amount,
        nonce: refund.nonce,
        receiverAuthorizerSignature: refund_signature,
    }
    .abi_encode();
    let data = if claims.is_empty() {
        refund_call
    } else {
        let claim = match claim_call(app, claims, refund.claim_signature).await? {
            Ok(claim) => claim.abi_encode(),
            Err(refusal) => return Ok(SettleResponse::failed(app, refusal, Some(payer))),
        };
        Escrow::multicallCall {
            data: vec![claim.into(), refund_call.into()],
        }
        .abi_encode()
    };
    let answer = send_escrow_call(app, "batch-refund", payer, data, "refund", |_| None).await?;
    if !answer.success {
        return Ok(answer);
    }
    let after = state(app, id).await?;
    Ok(SettleResponse {
        amount: Some(before.balance.saturating_sub(after.balance).to_string()),
        extra: Some(json!({ "channelState": after.extra(id) })),
        ..answer
    })
}

/// Simulates `data` to the escrow, sends it once through the engine (kept under `kind` and
/// the call's hash) and answers once mined; `amount` reads what was settled from the logs.
async fn send_escrow_call(
    app: &App,
    kind: &str,
    party: Address,
    data: Vec<u8>,
    what: &str,
    amount: impl FnOnce(&[bursar_client::rpc::RpcLog]) -> Option<String>,
) -> Result<SettleResponse, Error> {
    let signer = signer_for(app, party);
    let hash = alloy_primitives::hex::encode(keccak256(&data));
    let key = format!("{kind}:{hash}");
    let used = code(&format!("{what}_already_sent"));
    let settlement = Settlement {
        key: &key,
        request_hash: &hash,
        used: &used,
        payer: party,
    };
    let send = async {
        if let Err(refusal) =
            simulate(app, signer, &data, &format!("{what}_simulation_failed")).await?
        {
            return Ok(Err(refusal));
        }
        let tx = queue(app, &settlement, signer, BATCH_SETTLEMENT, data.clone()).await?;
        tracing::info!(%party, transaction = tx, "x402 batch {what} queued");
        Ok(Ok(tx))
    };
    let outcome = |tx| async move {
        let (hash, succeeded) = match mined(app, tx, None).await? {
            Ok(mined) => mined,
            Err(pending) => return Ok(pending),
        };
        if !succeeded {
            let why = no(
                &format!("{what}_transaction_failed"),
                format!("the {what} was mined but reverted"),
            );
            return Ok(SettleResponse {
                transaction: hash.to_string(),
                ..SettleResponse::failed(app, why, None)
            });
        }
        let logs = app
            .client
            .receipt(hash)
            .await?
            .map(|r| r.logs)
            .unwrap_or_default();
        Ok(SettleResponse {
            payer: None,
            amount: amount(&logs),
            ..SettleResponse::settled(app, party, hash.to_string())
        })
    };
    settlement.run(app, send, outcome).await
}
