//! `batch-settlement`'s payloads as x402's packages send them (`@x402/evm` 2.27): JSON with
//! addresses and hashes in hex and amounts as decimal strings, parsed once into the escrow's
//! own types.

use alloy_primitives::{aliases::U40, Address, Bytes, B256, U256};
use bursar_bindings::x402::{ChannelConfig, IX402BatchSettlement::VoucherClaim};
use serde::Deserialize;
use serde_json::Value;

use crate::kernel::json::Amount;

/// A channel's terms.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Config {
    payer: Address,
    payer_authorizer: Address,
    receiver: Address,
    receiver_authorizer: Address,
    token: Address,
    withdraw_delay: u64,
    salt: B256,
}

impl Config {
    /// As the escrow takes it; `None` when the withdraw delay does not fit its 40 bits.
    pub(super) fn channel(&self) -> Option<ChannelConfig> {
        Some(ChannelConfig {
            payer: self.payer,
            payerAuthorizer: self.payer_authorizer,
            receiver: self.receiver,
            receiverAuthorizer: self.receiver_authorizer,
            token: self.token,
            withdrawDelay: U40::try_from(self.withdraw_delay).ok()?,
            salt: self.salt,
        })
    }
}

/// A voucher as a request carries it.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Voucher {
    pub(super) channel_id: B256,
    pub(super) max_claimable_amount: Amount,
    pub(super) signature: Bytes,
}

/// An EIP-3009 deposit authorization: `ReceiveWithAuthorization` to the collector.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Erc3009 {
    pub(super) valid_after: Amount,
    pub(super) valid_before: Amount,
    pub(super) salt: B256,
    pub(super) signature: Bytes,
}

/// How a deposit is authorized.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Authorization {
    #[serde(default)]
    pub(super) erc3009_authorization: Option<Erc3009>,
    #[serde(default)]
    pub(super) permit2_authorization: Option<Value>,
}

/// A deposit with the request's voucher.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Deposit {
    pub(super) amount: Amount,
    pub(super) authorization: Authorization,
}

/// One claim of a batch.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Claim {
    voucher: ClaimVoucher,
    signature: Bytes,
    total_claimed: Amount,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ClaimVoucher {
    channel: Config,
    max_claimable_amount: Amount,
}

impl Claim {
    /// As the escrow takes it; `None` when an amount is beyond 128 bits or the delay beyond 40.
    pub(super) fn voucher_claim(&self) -> Option<VoucherClaim> {
        Some(VoucherClaim {
            voucher: bursar_bindings::x402::IX402BatchSettlement::VoucherFields {
                channel: self.voucher.channel.channel()?,
                maxClaimableAmount: narrow(self.voucher.max_claimable_amount.0)?,
            },
            signature: self.signature.clone(),
            totalClaimed: narrow(self.total_claimed.0)?,
        })
    }
}

/// What a payment payload or a settle action says, by its `type`.
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub(super) enum Payload {
    /// A first request (or a top-up): a deposit and the request's voucher.
    #[serde(rename_all = "camelCase")]
    Deposit {
        channel_config: Config,
        voucher: Voucher,
        deposit: Deposit,
    },
    /// A later request: its voucher.
    #[serde(rename_all = "camelCase")]
    Voucher {
        channel_config: Config,
        voucher: Voucher,
    },
    /// A payer asking for its unclaimed money back; the server adds what settling needs.
    #[serde(rename_all = "camelCase")]
    Refund {
        channel_config: Config,
        voucher: Voucher,
        #[serde(default)]
        amount: Option<Amount>,
        #[serde(default)]
        refund_nonce: Option<Amount>,
        #[serde(default)]
        claims: Vec<Claim>,
        #[serde(default)]
        refund_authorizer_signature: Option<Bytes>,
        #[serde(default)]
        claim_authorizer_signature: Option<Bytes>,
    },
    /// The server's claim of the vouchers it holds, many channels at once.
    #[serde(rename_all = "camelCase")]
    Claim {
        claims: Vec<Claim>,
        #[serde(default)]
        claim_authorizer_signature: Option<Bytes>,
    },
    /// The server's sweep of what was claimed for it.
    Settle { receiver: Address, token: Address },
}

/// An amount the escrow keeps in 128 bits.
pub(super) fn narrow(amount: U256) -> Option<u128> {
    u128::try_from(amount).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn config() -> Value {
        json!({
            "payer": "0x976EA74026E726554dB657fA54763abd0C3a0aa9",
            "payerAuthorizer": "0x976ea74026e726554db657fa54763abd0c3a0aa9",
            "receiver": "0x23618e81E3f5cdF7f54C3d65f7FBc0aBf5B21E8f",
            "receiverAuthorizer": "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc",
            "token": "0xaf88d065e77c8cC2239327C5EDb3A432268e5831",
            "withdrawDelay": 900,
            "salt": format!("0x{}", "00".repeat(32)),
        })
    }

    #[test]
    fn the_packages_payloads_parse_by_type() {
        let voucher = json!({
            "channelId": format!("0x{}", "ab".repeat(32)),
            "maxClaimableAmount": "10000",
            "signature": format!("0x{}", "11".repeat(65)),
        });
        let deposit: Payload = serde_json::from_value(json!({
            "type": "deposit",
            "channelConfig": config(),
            "voucher": voucher,
            "deposit": {"amount": "100000", "authorization": {"erc3009Authorization": {
                "validAfter": "0", "validBefore": "1900000000",
                "salt": format!("0x{}", "07".repeat(32)),
                "signature": format!("0x{}", "22".repeat(65)),
            }}},
        }))
        .unwrap();
        let Payload::Deposit {
            deposit,
            channel_config,
            ..
        } = deposit
        else {
            panic!("a deposit")
        };
        assert_eq!(deposit.amount.0, U256::from(100_000));
        assert_eq!(
            channel_config.channel().unwrap().withdrawDelay,
            U40::from(900)
        );
        let settle: Payload = serde_json::from_value(json!({
            "type": "settle",
            "receiver": "0x23618e81E3f5cdF7f54C3d65f7FBc0aBf5B21E8f",
            "token": "0xaf88d065e77c8cC2239327C5EDb3A432268e5831",
        }))
        .unwrap();
        assert!(matches!(settle, Payload::Settle { .. }));
        // An amount as a number, a delay beyond 40 bits: refused, not misread.
        assert!(serde_json::from_value::<Payload>(json!({
            "type": "voucher", "channelConfig": config(),
            "voucher": {"channelId": format!("0x{}", "ab".repeat(32)), "maxClaimableAmount": 5,
                        "signature": "0x"},
        }))
        .is_err());
        let mut far = config();
        far["withdrawDelay"] = json!(1u64 << 41);
        let far: Config = serde_json::from_value(far).unwrap();
        assert!(far.channel().is_none());
    }
}
