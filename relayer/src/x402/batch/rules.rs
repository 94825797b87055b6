//! The rules a `batch-settlement` payment must meet before the facilitator answers it valid or
//! sends anything: its channel against the server's requirements, its voucher against the
//! channel's state on chain. Pure, with x402's own codes (`invalid_batch_settlement_evm_*`),
//! in the order x402's facilitator checks them.

use alloy_primitives::{Address, B256, U256};
use bursar_bindings::x402::{self, ChannelConfig};
use serde_json::{json, Value};

use crate::x402::types::{refuse, Refusal, Requirements};

/// `invalid_batch_settlement_evm_<what>`.
pub(super) fn code(what: &str) -> String {
    format!("invalid_batch_settlement_evm_{what}")
}

fn no(what: &str, message: impl Into<String>) -> Refusal {
    refuse(&code(what), message)
}

/// What the server asks: where the money goes, in what, and the channel terms it wants.
#[derive(Clone, Debug)]
pub(super) struct Terms {
    pub(super) pay_to: Address,
    pub(super) asset: Address,
    receiver_authorizer: Option<Address>,
    withdraw_delay: Option<u64>,
    /// The token's EIP-712 domain (for EIP-3009 deposits).
    pub(super) token_domain: Option<(String, String)>,
}

impl Terms {
    /// The requirements' terms; a refusal when one does not parse.
    pub(super) fn of(r: &Requirements) -> Result<Terms, Refusal> {
        let bad = || {
            refuse(
                "invalid_payment_requirements",
                "asset or payTo does not parse",
            )
        };
        let extra = r.extra.as_ref();
        let text = |key: &str| extra.and_then(|e| e.get(key)).and_then(Value::as_str);
        Ok(Terms {
            pay_to: r.pay_to.parse().map_err(|_| bad())?,
            asset: r.asset.parse().map_err(|_| bad())?,
            receiver_authorizer: text("receiverAuthorizer").and_then(|a| a.parse().ok()),
            withdraw_delay: extra
                .and_then(|e| e.get("withdrawDelay"))
                .and_then(Value::as_u64),
            token_domain: text("name")
                .zip(text("version"))
                .map(|(n, v)| (n.into(), v.into())),
        })
    }
}

/// The channel a payment names, against the requirements: its id is its config's on this
/// chain, and it pays `payTo` in the asset, under the receiver authorizer and withdraw delay
/// the server asked for.
pub(super) fn check_channel(
    config: &ChannelConfig,
    claimed_id: B256,
    chain_id: u64,
    terms: &Terms,
) -> Result<(), Refusal> {
    if x402::channel_id(config, chain_id) != claimed_id {
        return Err(no(
            "channel_id_mismatch",
            "the channel id is not its config's on this chain",
        ));
    }
    if config.receiver != terms.pay_to {
        return Err(no(
            "receiver_mismatch",
            "the channel pays another receiver than payTo",
        ));
    }
    match terms.receiver_authorizer {
        Some(a) if a != Address::ZERO && a == config.receiverAuthorizer => {}
        _ => {
            return Err(no(
                "receiver_authorizer_mismatch",
                "the channel's receiver authorizer is not the one the requirements name",
            ))
        }
    }
    if config.token != terms.asset {
        return Err(no(
            "token_mismatch",
            "the channel is in another token than the asset",
        ));
    }
    let delay: u64 = config.withdrawDelay.to();
    if terms.withdraw_delay.is_some_and(|d| d != delay) {
        return Err(no(
            "withdraw_delay_mismatch",
            "the channel's withdraw delay is not the one asked",
        ));
    }
    if !x402::WITHDRAW_DELAY_RANGE.contains(&delay) {
        return Err(no(
            "withdraw_delay_out_of_range",
            "the withdraw delay is outside 900 s to 30 days",
        ));
    }
    Ok(())
}

/// A channel's state on chain.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct State {
    pub(super) balance: u128,
    pub(super) total_claimed: u128,
    /// When the payer asked to withdraw (0: it has not).
    pub(super) withdraw_requested_at: u64,
    pub(super) refund_nonce: U256,
}

impl State {
    /// As x402's answers carry it (`channelState`).
    pub(super) fn extra(&self, id: B256) -> Value {
        json!({
            "channelId": id.to_string(),
            "balance": self.balance.to_string(),
            "totalClaimed": self.total_claimed.to_string(),
            "withdrawRequestedAt": self.withdraw_requested_at,
            "refundNonce": self.refund_nonce.to_string(),
        })
    }
}

/// What a voucher is for: a request, or a payer's refund (whose voucher may repeat the last).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Use {
    Request,
    Refund,
}

/// A voucher for `ceiling` in all, against the channel's state: within what it holds, above
/// what was claimed (a refund's may equal it).
pub(super) fn check_voucher(state: &State, ceiling: u128, used: Use) -> Result<(), Refusal> {
    if state.balance == 0 {
        return Err(no("channel_not_found", "the channel holds nothing"));
    }
    if ceiling > state.balance {
        return Err(no(
            "cumulative_exceeds_balance",
            "the voucher is for more than the channel holds",
        ));
    }
    let below = match used {
        Use::Request => ceiling <= state.total_claimed,
        Use::Refund => ceiling < state.total_claimed,
    };
    if below {
        return Err(no(
            "cumulative_below_claimed",
            "the voucher is for less than was claimed",
        ));
    }
    Ok(())
}

/// A deposit of `amount` from a payer holding `payer_balance`, with a voucher for `ceiling`.
pub(super) fn check_deposit(
    state: &State,
    payer_balance: U256,
    amount: u128,
    ceiling: u128,
) -> Result<(), Refusal> {
    if amount == 0 {
        return Err(no("payload_type", "a deposit of nothing"));
    }
    if payer_balance < U256::from(amount) {
        return Err(no(
            "insufficient_balance",
            "the payer holds less than the deposit",
        ));
    }
    if U256::from(ceiling) > U256::from(state.balance) + U256::from(amount) {
        return Err(no(
            "cumulative_exceeds_balance",
            "the voucher is for more than the channel will hold",
        ));
    }
    if ceiling <= state.total_claimed {
        return Err(no(
            "cumulative_below_claimed",
            "the voucher is for less than was claimed",
        ));
    }
    Ok(())
}

/// How much a refund of `asked` returns once the claims sent with it (totals `claimed`) land:
/// at most what is left above them; `None` when nothing would be returned or the claims ask
/// more than the channel holds.
pub(super) fn refundable(
    state: &State,
    claimed: impl IntoIterator<Item = u128>,
    asked: u128,
) -> Option<u128> {
    let after = claimed.into_iter().fold(state.total_claimed, u128::max);
    if after > state.balance || asked == 0 {
        return None;
    }
    Some(asked.min(state.balance - after)).filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use alloy_primitives::aliases::U40;

    use super::*;

    const CHAIN: u64 = 412_346;

    fn config() -> ChannelConfig {
        ChannelConfig {
            payer: Address::repeat_byte(1),
            payerAuthorizer: Address::repeat_byte(2),
            receiver: Address::repeat_byte(3),
            receiverAuthorizer: Address::repeat_byte(4),
            token: Address::repeat_byte(5),
            withdrawDelay: U40::from(900),
            salt: B256::ZERO,
        }
    }

    fn terms() -> Terms {
        Terms {
            pay_to: Address::repeat_byte(3),
            asset: Address::repeat_byte(5),
            receiver_authorizer: Some(Address::repeat_byte(4)),
            withdraw_delay: Some(900),
            token_domain: None,
        }
    }

    fn reason(r: Result<(), Refusal>) -> String {
        r.unwrap_err()
            .0
            .trim_start_matches("invalid_batch_settlement_evm_")
            .to_owned()
    }

    #[test]
    fn a_channel_must_be_the_one_the_server_asked_for() {
        let c = config();
        let id = x402::channel_id(&c, CHAIN);
        assert_eq!(check_channel(&c, id, CHAIN, &terms()), Ok(()));
        assert_eq!(
            reason(check_channel(&c, id, 1, &terms())),
            "channel_id_mismatch"
        );
        let other = |f: fn(&mut ChannelConfig)| {
            let mut c = config();
            f(&mut c);
            let id = x402::channel_id(&c, CHAIN);
            reason(check_channel(&c, id, CHAIN, &terms()))
        };
        assert_eq!(
            other(|c| c.receiver = Address::repeat_byte(9)),
            "receiver_mismatch"
        );
        assert_eq!(
            other(|c| c.receiverAuthorizer = Address::repeat_byte(9)),
            "receiver_authorizer_mismatch"
        );
        assert_eq!(
            other(|c| c.token = Address::repeat_byte(9)),
            "token_mismatch"
        );
        assert_eq!(
            other(|c| c.withdrawDelay = U40::from(901)),
            "withdraw_delay_mismatch"
        );
        let lax = Terms {
            withdraw_delay: None,
            ..terms()
        };
        let mut short = config();
        short.withdrawDelay = U40::from(899);
        let id = x402::channel_id(&short, CHAIN);
        assert_eq!(
            reason(check_channel(&short, id, CHAIN, &lax)),
            "withdraw_delay_out_of_range"
        );
        // No receiver authorizer asked (or the zero address): nothing to hold claims to.
        let none = Terms {
            receiver_authorizer: Some(Address::ZERO),
            ..terms()
        };
        let id = x402::channel_id(&c, CHAIN);
        assert_eq!(
            reason(check_channel(&c, id, CHAIN, &none)),
            "receiver_authorizer_mismatch"
        );
    }

    #[test]
    fn vouchers_stay_within_the_channel_and_above_its_claims() {
        let s = State {
            balance: 100,
            total_claimed: 40,
            ..State::default()
        };
        assert_eq!(check_voucher(&s, 50, Use::Request), Ok(()));
        assert_eq!(
            reason(check_voucher(&s, 101, Use::Request)),
            "cumulative_exceeds_balance"
        );
        assert_eq!(
            reason(check_voucher(&s, 40, Use::Request)),
            "cumulative_below_claimed"
        );
        assert_eq!(check_voucher(&s, 40, Use::Refund), Ok(()));
        assert_eq!(
            reason(check_voucher(&s, 39, Use::Refund)),
            "cumulative_below_claimed"
        );
        assert_eq!(
            reason(check_voucher(&State::default(), 1, Use::Request)),
            "channel_not_found"
        );
    }

    #[test]
    fn a_deposit_covers_its_voucher_from_what_the_payer_holds() {
        let s = State {
            balance: 100,
            total_claimed: 100,
            ..State::default()
        };
        assert_eq!(check_deposit(&s, U256::from(50), 50, 150), Ok(()));
        assert_eq!(
            reason(check_deposit(&s, U256::from(49), 50, 150)),
            "insufficient_balance"
        );
        assert_eq!(
            reason(check_deposit(&s, U256::from(50), 50, 151)),
            "cumulative_exceeds_balance"
        );
        assert_eq!(
            reason(check_deposit(&s, U256::from(50), 50, 100)),
            "cumulative_below_claimed"
        );
        assert_eq!(
            reason(check_deposit(&s, U256::from(50), 0, 150)),
            "payload_type"
        );
        // No overflow at the top of the range.
        let full = State {
            balance: u128::MAX,
            ..State::default()
        };
        assert_eq!(
            check_deposit(&full, U256::MAX, u128::MAX, u128::MAX),
            Ok(())
        );
    }

    #[test]
    fn a_refund_returns_what_is_left_above_the_claims_it_carries() {
        let s = State {
            balance: 100,
            total_claimed: 30,
            ..State::default()
        };
        assert_eq!(refundable(&s, [], 1_000), Some(70));
        assert_eq!(refundable(&s, [60, 50], 1_000), Some(40));
        assert_eq!(refundable(&s, [60], 10), Some(10));
        assert_eq!(
            refundable(&s, [20], 1_000),
            Some(70),
            "a stale claim changes nothing"
        );
        assert_eq!(refundable(&s, [100], 1_000), None, "nothing left");
        assert_eq!(
            refundable(&s, [101], 1_000),
            None,
            "claims beyond the channel"
        );
        assert_eq!(refundable(&s, [], 0), None);
    }
}
