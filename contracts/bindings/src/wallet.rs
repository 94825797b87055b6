//! SessionWallet: escrowed, policy-bound sessions whose keys sign payment intents.

alloy_sol_types::sol! {
    #![sol(all_derives)]
    /// The external interface of SessionWallet (see `contracts/session-wallet`).
    ///
    /// Owner-signed entry points (`openSessionWithSig`, `decidePendingWithSig`) live in
    /// SessionGateway, the only caller allowed to open sessions or decide pending payments on an
    /// owner's behalf (`openSession` with `owner != msg.sender`, `decidePendingFor`).
    ///
    /// Conventions: `token == address(0)` is the native currency; `perPaymentCap == 0`,
    /// `coSignThreshold == 0` and `periodSeconds == 0` switch that rule off; `validAfter == 0`
    /// means at once; `leaseSeconds == 0` means no lease; `leaseKeeper == address(0)` lets the
    /// owner and the session key renew the lease, otherwise only the owner and the keeper can.
    /// Amounts (deposit, caps, budget, threshold) are at most `2^128 - 1`, list ids at most
    /// `2^64 - 1`. Tokens must move exactly the amount asked (no fee-on-transfer, no rebasing).
    ///
    /// A session's id is `uint256(keccak256(abi.encode(owner, nonce)))` (`sessionId`): each of an
    /// owner's nonces opens at most one session (`WalletNonceUsed` otherwise), which is also what
    /// makes an owner's signed `OpenSession` single-use — no nonce is stored besides the session.
    ///
    /// One address, two programs: the wallet runs open, pay, revoke, close and
    /// `sessionAuthority` itself and delegates every other function to its `extension`, which
    /// runs on the wallet's storage (see `contracts/README.md`).
    interface ISessionWallet {
        // ---- lifecycle -------------------------------------------------------------------
        function openSession(address owner, address sessionKey, address guardian, address token, uint256 deposit, uint256 perPaymentCap, uint256 periodBudget, uint64 periodSeconds, uint256 coSignThreshold, uint64 validAfter, uint64 expiresAt, uint64 leaseSeconds, address leaseKeeper, uint256 allowlistId, bytes32 metadata, uint256 nonce) external payable returns (uint256);
        function pay(uint256 sessionId, address to, uint256 amount, bytes32 purpose, uint256 nonce, uint256 deadline, bytes signature) external returns (bool, uint256);
        /// Many signed intents, of any sessions and tokens, in one transaction: `intents` is
        /// their packed records (`bursar_bindings::wallet::batch`). Each is checked and carried
        /// out on its own, with `pay`'s rules, receipts and events; a refused one emits
        /// `PaymentFailed` and leaves its nonce unused. Returns how many were paid or held.
        function payBatch(bytes intents) external returns (uint256);
        function approvePending(uint256 pendingId) external returns (uint256);
        function rejectPending(uint256 pendingId) external;
        function decidePendingFor(uint256 pendingId, bool approve, address owner) external returns (uint256);
        function topUp(uint256 sessionId, uint256 amount) external payable;
        function revoke(uint256 sessionId) external;
        function close(uint256 sessionId) external returns (uint256);
        function renewLease(uint256 sessionId, uint256 nonce, uint256 deadline, bytes signature) external returns (uint64);
        function claim(address token, address to) external returns (uint256);

        // ---- authorizations third parties settle (x402 `exact`) ---------------------------
        function reserve(uint256 sessionId, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 purpose, bytes signature) external returns (bool, uint256);
        function release(uint256 sessionId, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 purpose) external returns (uint256);
        function isValidSignature(bytes32 hash, bytes signature) external view returns (bytes4);
        function reservation(bytes32 digest) external view returns (uint256, uint256, uint64, uint256);

        // ---- x402 batch-settlement channels (the wallet as payer) -------------------------
        function reserveDeposit(uint256 sessionId, address receiver, address receiverAuthorizer, uint64 withdrawDelay, uint256 value, uint256 validBefore, bytes32 purpose, bytes signature) external returns (bool, uint256);
        function confirmDeposit(uint256 sessionId, address receiver, address receiverAuthorizer, uint64 withdrawDelay, uint256 value, uint256 validBefore, bytes32 purpose) external returns (uint256);
        function releaseDeposit(uint256 sessionId, address receiver, address receiverAuthorizer, uint64 withdrawDelay, uint256 value, uint256 validBefore, bytes32 purpose) external returns (uint256);
        function creditChannel(uint256 sessionId, address receiver, address receiverAuthorizer, uint64 withdrawDelay) external returns (uint256);
        function withdrawChannel(uint256 sessionId, address receiver, address receiverAuthorizer, uint64 withdrawDelay) external;
        function channel(bytes32 channelId) external view returns (uint256, uint256);

        // ---- views -----------------------------------------------------------------------
        function sessionTerms(uint256 sessionId) external view returns (address, address, address, address, uint256, uint256, uint64, uint256, uint64, uint64, uint64, address, uint256);
        function sessionState(uint256 sessionId) external view returns (uint8, uint256, uint256, uint256, uint256, uint64, uint64);
        function sessionAuthority(uint256 sessionId) external view returns (address, address, bool);
        function remainingDeposit(uint256 sessionId) external view returns (uint256);
        function remainingPeriodBudget(uint256 sessionId) external view returns (uint256);
        function pendingPayment(uint256 pendingId) external view returns (uint256, address, uint256, bytes32, uint256, uint64, uint8);
        function isNonceUsed(uint256 sessionId, uint256 nonce) external view returns (bool);
        function domainSeparator() external view returns (bytes32);
        function counterpartyRegistry() external view returns (address);
        function receiptRegistry() external view returns (address);
        function gateway() external view returns (address);
        function extension() external view returns (address);
        function sessionId(address owner, uint256 nonce) external pure returns (uint256);
        function pendingTtl() external pure returns (uint64);
        function claimable(address owner, address token) external view returns (uint256);

        // ---- events ----------------------------------------------------------------------
        event SessionOpened(uint256 indexed sessionId, address indexed owner, address indexed sessionKey, address guardian, address token, uint256 deposit, uint256 perPaymentCap, uint256 periodBudget, uint64 periodSeconds, uint256 coSignThreshold, uint64 validAfter, uint64 expiresAt, uint64 leaseSeconds, address leaseKeeper, uint256 allowlistId, bytes32 metadata);
        event SessionToppedUp(uint256 indexed sessionId, address indexed from, uint256 amount, uint256 deposit);
        event PaymentExecuted(uint256 indexed sessionId, address indexed to, uint256 indexed receiptId, uint256 amount, bytes32 purpose, uint256 nonce);
        /// An intent of a `payBatch` was refused: `reason` is the error `pay` would revert with.
        event PaymentFailed(uint256 indexed sessionId, uint256 nonce, bytes reason);
        event PaymentPending(uint256 indexed sessionId, address indexed to, uint256 indexed pendingId, uint256 amount, bytes32 purpose, uint256 nonce, uint64 expiresAt);
        event PaymentApproved(uint256 indexed sessionId, uint256 indexed pendingId, address indexed by);
        event PaymentRejected(uint256 indexed sessionId, uint256 indexed pendingId, address indexed by);
        event SessionRevoked(uint256 indexed sessionId, address indexed by);
        event SessionClosed(uint256 indexed sessionId, address indexed by, uint256 spent, uint256 refund);
        event LeaseRenewed(uint256 indexed sessionId, uint64 leaseExpiresAt);
        event RefundDeferred(uint256 indexed sessionId, address indexed owner, address indexed token, uint256 amount);
        event RefundClaimed(address indexed owner, address indexed token, address to, uint256 amount);
        event PaymentReserved(uint256 indexed sessionId, address indexed to, uint256 indexed receiptId, uint256 amount, bytes32 purpose, bytes32 nonce, bytes32 digest, uint64 validBefore);
        event DepositConfirmed(uint256 indexed sessionId, bytes32 indexed channelId, uint256 amount, uint256 deposited);
        event ChannelCredited(uint256 indexed sessionId, bytes32 indexed channelId, uint256 amount, uint256 credited);
        event ReservationReleased(uint256 indexed sessionId, address indexed to, uint256 indexed receiptId, bytes32 digest, uint256 amount);

        // ---- errors ----------------------------------------------------------------------
        error WalletUnauthorized(address caller);
        error WalletUnknownSession(uint256 sessionId);
        error WalletInvalidParameter(uint8 parameter);
        error WalletInvalidSignature();
        error WalletWrongSigner(address signer, address expected);
        error WalletNonceUsed(uint256 nonce);
        error WalletDeadlinePassed(uint256 deadline);
        error WalletSessionNotYetValid(uint256 sessionId, uint64 validAfter);
        error WalletSessionExpired(uint256 sessionId, uint64 expiresAt);
        error WalletLeaseLapsed(uint256 sessionId, uint64 leaseExpiresAt);
        error WalletSessionRevoked(uint256 sessionId);
        error WalletSessionClosed(uint256 sessionId);
        error WalletSessionStillActive(uint256 sessionId);
        error WalletCounterpartyNotAllowed(uint256 listId, address counterparty, uint256 amount);
        error WalletPaymentCapExceeded(uint256 amount, uint256 cap);
        error WalletPeriodBudgetExceeded(uint256 amount, uint256 available);
        error WalletInsufficientDeposit(uint256 amount, uint256 available);
        error WalletValueMismatch(uint256 sent, uint256 expected);
        error WalletTransferFailed(address token, address to, uint256 amount);
        error WalletCallFailed(address target, bytes reason);
        error WalletUnknownPending(uint256 pendingId);
        error WalletPendingExpired(uint256 pendingId, uint64 expiresAt);
        error WalletPendingResolved(uint256 pendingId, uint8 status);
        error WalletNoLease(uint256 sessionId);
        error WalletTokenWithoutCode(address token);
        error WalletInvalidPayee(address payee);
        error WalletTransferShortfall(address token, uint256 expected, uint256 received);
        error WalletUnknownReservation(bytes32 digest);
        error WalletReservationLive(bytes32 digest, uint64 validBefore);
        error WalletReservationUsed(bytes32 digest);
    }
}

/// The EIP-3009 `nonce` of the authorization a session reserves: `keccak256(abi.encode(
/// sessionId, to, value, validAfter, validBefore, purpose))`, as `reserve` derives it. Two
/// authorizations of one token that share a nonce are therefore the same authorization, so a
/// settled one can never strand another that the token would refuse for its nonce.
pub fn authorization_nonce(
    session_id: alloy_primitives::U256,
    to: alloy_primitives::Address,
    value: alloy_primitives::U256,
    valid_after: alloy_primitives::U256,
    valid_before: alloy_primitives::U256,
    purpose: alloy_primitives::B256,
) -> alloy_primitives::B256 {
    use alloy_sol_types::SolValue;
    alloy_primitives::keccak256(
        (session_id, to, value, valid_after, valid_before, purpose).abi_encode(),
    )
}

/// The x402 `batch-settlement` channel a session pays `receiver` through, as `reserveDeposit`
/// and its relatives build it: the wallet its payer, the session key its payer authorizer, the
/// session's token, the session id its salt.
pub fn x402_channel(
    wallet: alloy_primitives::Address,
    session_key: alloy_primitives::Address,
    token: alloy_primitives::Address,
    session_id: alloy_primitives::U256,
    receiver: alloy_primitives::Address,
    receiver_authorizer: alloy_primitives::Address,
    withdraw_delay: u64,
) -> crate::x402::ChannelConfig {
    crate::x402::ChannelConfig {
        payer: wallet,
        payerAuthorizer: session_key,
        receiver,
        receiverAuthorizer: receiver_authorizer,
        token,
        withdrawDelay: alloy_primitives::aliases::U40::from(withdraw_delay & 0xff_ffff_ffff),
        salt: alloy_primitives::B256::from(session_id),
    }
}

/// The ERC-3009 salt of a session's channel deposit of `value`, reserved until `valid_before`
/// for `purpose`: [`authorization_nonce`] of it with `validAfter` zero (the escrow's nonce is
/// then `keccak256(abi.encode(channelId, salt))`, [`crate::x402::erc3009_deposit_nonce`]).
pub fn x402_deposit_salt(
    session_id: alloy_primitives::U256,
    receiver: alloy_primitives::Address,
    value: alloy_primitives::U256,
    valid_before: alloy_primitives::U256,
    purpose: alloy_primitives::B256,
) -> alloy_primitives::U256 {
    let nonce = authorization_nonce(
        session_id,
        receiver,
        value,
        alloy_primitives::U256::ZERO,
        valid_before,
        purpose,
    );
    alloy_primitives::U256::from_be_bytes(nonce.0)
}

/// What `isValidSignature` answers for a digest it vouches for (ERC-1271's magic value, the
/// function's selector).
pub const ERC1271_MAGIC_VALUE: [u8; 4] = [0x16, 0x26, 0xba, 0x7e];

/// The id of the session `owner` opens with `nonce`: `uint256(keccak256(abi.encode(owner,
/// nonce)))`, as `sessionId` computes it.
pub fn session_id(
    owner: alloy_primitives::Address,
    nonce: alloy_primitives::U256,
) -> alloy_primitives::U256 {
    let mut words = [0u8; 64];
    words[12..32].copy_from_slice(owner.as_slice());
    words[32..].copy_from_slice(&nonce.to_be_bytes::<32>());
    alloy_primitives::keccak256(words).into()
}

impl crate::eip712::PaymentIntent {
    /// The `pay` call carrying this intent with the session key's `signature` of it.
    pub fn pay_call(&self, signature: alloy_primitives::Bytes) -> ISessionWallet::payCall {
        ISessionWallet::payCall {
            sessionId: self.session,
            to: self.to,
            amount: self.amount,
            purpose: self.purpose,
            nonce: self.nonce,
            deadline: self.deadline,
            signature,
        }
    }
}

impl ISessionWallet::payCall {
    /// The intent this call carries (its signature aside).
    pub fn intent(&self) -> crate::eip712::PaymentIntent {
        crate::eip712::PaymentIntent {
            session: self.sessionId,
            to: self.to,
            amount: self.amount,
            purpose: self.purpose,
            nonce: self.nonce,
            deadline: self.deadline,
        }
    }
}

/// `status` of a session as returned by `sessionState`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum SessionStatus {
    /// No session has this id.
    None = 0,
    /// Open: pays while started, unexpired and (with a lease) renewed.
    Active = 1,
    /// Revoked: pays nothing more; anyone may close it.
    Revoked = 2,
    /// Closed and refunded.
    Closed = 3,
}

/// `status` of a pending payment as returned by `pendingPayment`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PendingStatus {
    /// No pending payment has this id.
    None = 0,
    /// Waiting for the owner; its amount is held.
    Pending = 1,
    /// Approved and paid.
    Approved = 2,
    /// Rejected (or cleared after expiry); its hold released.
    Rejected = 3,
}

/// The `parameter` of `WalletInvalidParameter` (and `GatewayInvalidParameter`): which argument
/// is unusable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum InvalidParameter {
    /// The session key is the zero address.
    SessionKey = 0,
    /// The deposit is zero.
    Deposit = 1,
    /// `expiresAt` is not after `validAfter` and the current time.
    ExpiresAt = 2,
    /// A period budget without a period length, or the other way round.
    Period = 3,
    /// The owner is the zero address.
    Owner = 4,
    /// Native currency cannot be pulled with a signature (`openSessionWithSig`).
    Token = 5,
    /// A zero amount (payment or top-up).
    Amount = 6,
    /// A registry, gateway or extension address of zero (constructor).
    Registry = 7,
    /// An amount above `2^128 - 1` or an allowlist id above `2^64 - 1` (`openSession`), or a
    /// deposit that would pass `2^128 - 1` (`topUp`).
    OutOfRange = 8,
    /// Nothing to claim, or a claim paid to the zero address (`claim`).
    Claim = 9,
    /// An authorization `reserve` cannot honour: the session pays in the native currency, or
    /// `validBefore` has passed or comes after the session's expiry.
    Authorization = 10,
    /// A delegation `redeemDelegations` cannot redeem: arrays of different lengths, an
    /// execution mode other than a single call with default behaviour (`bytes32(0)`), or a
    /// permission context shorter than `sessionId ‖ purpose ‖ nonce ‖ deadline`.
    Delegation = 11,
    /// An execution `redeemDelegations` does not carry out: anything but ERC-7579 single-call
    /// data of the session token's `transfer(to, amount)` without value.
    Execution = 12,
    /// `payBatch`'s `intents` is empty or not a whole number of records.
    Batch = 13,
    /// An x402 channel the session cannot pay into: a withdraw delay outside x402's range
    /// (15 minutes to 30 days) or ending after the session's expiry, or nothing to withdraw.
    Channel = 14,
}

impl InvalidParameter {
    /// Decodes the error's `parameter` byte.
    pub fn from_code(code: u8) -> Option<Self> {
        use InvalidParameter::*;
        [
            SessionKey,
            Deposit,
            ExpiresAt,
            Period,
            Owner,
            Token,
            Amount,
            Registry,
            OutOfRange,
            Claim,
            Authorization,
            Delegation,
            Execution,
            Batch,
            Channel,
        ]
        .into_iter()
        .find(|p| *p as u8 == code)
    }
}

/// `payBatch`'s packed intents: records of [`batch::RECORD_BYTES`] bytes, back to back,
/// `sessionId (32) ‖ to (20) ‖ amount (32) ‖ purpose (32) ‖ nonce (32) ‖ deadline (32) ‖
/// signature (65: r ‖ s ‖ v)`. Fixed records keep the wallet's decoder a few instructions (no
/// ABI offsets to validate), and cost 245 bytes of calldata an intent against 384 for an ABI
/// `(uint256,address,uint256,bytes32,uint256,uint256,bytes)[]`.
pub mod batch {
    use alloc::vec::Vec;
    use alloy_primitives::{Address, B256, U256};

    use super::ISessionWallet;
    use crate::eip712::PaymentIntent;

    /// Bytes of one packed intent.
    pub const RECORD_BYTES: usize = 32 + 20 + 32 * 4 + SIGNATURE_BYTES;
    /// Bytes of a record's signature: `r ‖ s ‖ v`.
    pub const SIGNATURE_BYTES: usize = 65;

    /// Appends `intent` and its session key's 65-byte `signature` to `packed`.
    ///
    /// # Panics
    /// When the signature is not 65 bytes (the session key is an EOA: its signatures are).
    pub fn push(packed: &mut Vec<u8>, intent: &PaymentIntent, signature: &[u8]) {
        assert_eq!(signature.len(), SIGNATURE_BYTES, "a 65-byte signature");
        packed.extend_from_slice(&intent.session.to_be_bytes::<32>());
        packed.extend_from_slice(intent.to.as_slice());
        packed.extend_from_slice(&intent.amount.to_be_bytes::<32>());
        packed.extend_from_slice(intent.purpose.as_slice());
        packed.extend_from_slice(&intent.nonce.to_be_bytes::<32>());
        packed.extend_from_slice(&intent.deadline.to_be_bytes::<32>());
        packed.extend_from_slice(signature);
    }

    /// The `payBatch` call carrying the signed intents of `calls` (`pay` calls), in order.
    ///
    /// # Panics
    /// As [`push`].
    pub fn pay_batch(calls: &[ISessionWallet::payCall]) -> ISessionWallet::payBatchCall {
        let mut intents = Vec::with_capacity(calls.len() * RECORD_BYTES);
        for c in calls {
            push(&mut intents, &c.intent(), &c.signature);
        }
        ISessionWallet::payBatchCall {
            intents: intents.into(),
        }
    }

    /// One record's intent and signature.
    pub fn read(record: &[u8; RECORD_BYTES]) -> (PaymentIntent, &[u8]) {
        let word = |at: usize| U256::from_be_slice(&record[at..at + 32]);
        let intent = PaymentIntent {
            session: word(0),
            to: Address::from_slice(&record[32..52]),
            amount: word(52),
            purpose: B256::from_slice(&record[84..116]),
            nonce: word(116),
            deadline: word(148),
        };
        (intent, &record[180..])
    }

    /// The records of `packed`, or `None` when it is empty or not a whole number of them.
    pub fn records(packed: &[u8]) -> Option<impl Iterator<Item = &[u8; RECORD_BYTES]>> {
        (!packed.is_empty() && packed.len().is_multiple_of(RECORD_BYTES)).then(|| {
            packed
                .chunks_exact(RECORD_BYTES)
                .map(|r| r.try_into().expect("exact chunks"))
        })
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn a_record_reads_back_as_it_was_pushed() {
            let intent = PaymentIntent {
                session: U256::MAX - U256::from(7),
                to: Address::repeat_byte(0xa1),
                amount: U256::from(1_234_567u64),
                purpose: B256::repeat_byte(0x42),
                nonce: U256::from(3) << 200,
                deadline: U256::from(1_700_000_600u64),
            };
            let signature = [0x5au8; SIGNATURE_BYTES];
            let mut packed = Vec::new();
            push(&mut packed, &intent, &signature);
            push(&mut packed, &intent, &signature);
            assert_eq!(packed.len(), 2 * RECORD_BYTES);
            let all: Vec<_> = records(&packed).unwrap().map(read).collect();
            assert_eq!(all.len(), 2);
            assert_eq!(all[1].0, intent);
            assert_eq!(all[1].1, &signature[..]);
            assert!(records(&packed[1..]).is_none(), "a partial record");
            assert!(records(&[]).is_none(), "nothing");
        }
    }
}
