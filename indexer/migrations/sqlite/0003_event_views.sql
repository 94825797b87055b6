-- One view per event, its arguments as columns (snake_case), canonical rows only: the typed
-- tables for SQL readers. Views rather than tables written at ingest: a log is written once,
-- in `logs`, decoded there (`args`), and these read it. Amounts, ids and hashes are text
-- (256-bit decimal, 0x-hex), addresses EIP-55, times (uint64) integers, id lists JSON.
-- `session_id` is the session the indexer attributed the event to (tokens' transfers too).

CREATE VIEW session_opened AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    json_extract(args, '$.owner') AS "owner",
    json_extract(args, '$.sessionKey') AS "session_key",
    json_extract(args, '$.guardian') AS "guardian",
    json_extract(args, '$.token') AS "token",
    json_extract(args, '$.deposit') AS "deposit",
    json_extract(args, '$.perPaymentCap') AS "per_payment_cap",
    json_extract(args, '$.periodBudget') AS "period_budget",
    json_extract(args, '$.periodSeconds') AS "period_seconds",
    json_extract(args, '$.coSignThreshold') AS "co_sign_threshold",
    json_extract(args, '$.validAfter') AS "valid_after",
    json_extract(args, '$.expiresAt') AS "expires_at",
    json_extract(args, '$.leaseSeconds') AS "lease_seconds",
    json_extract(args, '$.leaseKeeper') AS "lease_keeper",
    json_extract(args, '$.allowlistId') AS "allowlist_id",
    json_extract(args, '$.metadata') AS "metadata"
FROM logs WHERE event = 'SessionOpened' AND canonical = 1;

CREATE VIEW session_topped_up AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    json_extract(args, '$.from') AS "from_address",
    json_extract(args, '$.amount') AS "amount",
    json_extract(args, '$.deposit') AS "deposit"
FROM logs WHERE event = 'SessionToppedUp' AND canonical = 1;

CREATE VIEW payment_executed AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    json_extract(args, '$.to') AS "to_address",
    json_extract(args, '$.receiptId') AS "receipt_id",
    json_extract(args, '$.amount') AS "amount",
    json_extract(args, '$.purpose') AS "purpose",
    json_extract(args, '$.nonce') AS "nonce"
FROM logs WHERE event = 'PaymentExecuted' AND canonical = 1;

CREATE VIEW payment_pending AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    json_extract(args, '$.to') AS "to_address",
    json_extract(args, '$.pendingId') AS "pending_id",
    json_extract(args, '$.amount') AS "amount",
    json_extract(args, '$.purpose') AS "purpose",
    json_extract(args, '$.nonce') AS "nonce",
    json_extract(args, '$.expiresAt') AS "expires_at"
FROM logs WHERE event = 'PaymentPending' AND canonical = 1;

CREATE VIEW payment_approved AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    json_extract(args, '$.pendingId') AS "pending_id",
    json_extract(args, '$.by') AS "by_address"
FROM logs WHERE event = 'PaymentApproved' AND canonical = 1;

CREATE VIEW payment_rejected AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    json_extract(args, '$.pendingId') AS "pending_id",
    json_extract(args, '$.by') AS "by_address"
FROM logs WHERE event = 'PaymentRejected' AND canonical = 1;

CREATE VIEW session_revoked AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    json_extract(args, '$.by') AS "by_address"
FROM logs WHERE event = 'SessionRevoked' AND canonical = 1;

CREATE VIEW session_closed AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    json_extract(args, '$.by') AS "by_address",
    json_extract(args, '$.spent') AS "spent",
    json_extract(args, '$.refund') AS "refund"
FROM logs WHERE event = 'SessionClosed' AND canonical = 1;

CREATE VIEW lease_renewed AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    json_extract(args, '$.leaseExpiresAt') AS "lease_expires_at"
FROM logs WHERE event = 'LeaseRenewed' AND canonical = 1;

CREATE VIEW refund_deferred AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    json_extract(args, '$.owner') AS "owner",
    json_extract(args, '$.token') AS "token",
    json_extract(args, '$.amount') AS "amount"
FROM logs WHERE event = 'RefundDeferred' AND canonical = 1;

CREATE VIEW refund_claimed AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    json_extract(args, '$.owner') AS "owner",
    json_extract(args, '$.token') AS "token",
    json_extract(args, '$.to') AS "to_address",
    json_extract(args, '$.amount') AS "amount"
FROM logs WHERE event = 'RefundClaimed' AND canonical = 1;

CREATE VIEW gateway_bound AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    json_extract(args, '$.wallet') AS "wallet"
FROM logs WHERE event = 'GatewayBound' AND canonical = 1;

CREATE VIEW list_created AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    json_extract(args, '$.listId') AS "list_id",
    json_extract(args, '$.owner') AS "owner"
FROM logs WHERE event = 'ListCreated' AND canonical = 1;

CREATE VIEW list_ownership_transferred AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    json_extract(args, '$.listId') AS "list_id",
    json_extract(args, '$.previousOwner') AS "previous_owner",
    json_extract(args, '$.newOwner') AS "new_owner"
FROM logs WHERE event = 'ListOwnershipTransferred' AND canonical = 1;

CREATE VIEW list_admin_set AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    json_extract(args, '$.listId') AS "list_id",
    json_extract(args, '$.admin') AS "admin",
    json_extract(args, '$.enabled') AS "enabled"
FROM logs WHERE event = 'ListAdminSet' AND canonical = 1;

CREATE VIEW entry_set AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    json_extract(args, '$.listId') AS "list_id",
    json_extract(args, '$.counterparty') AS "counterparty",
    json_extract(args, '$.by') AS "by_address",
    json_extract(args, '$.allowed') AS "allowed",
    json_extract(args, '$.maxPerPayment') AS "max_per_payment",
    json_extract(args, '$.label') AS "label"
FROM logs WHERE event = 'EntrySet' AND canonical = 1;

CREATE VIEW entry_removed AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    json_extract(args, '$.listId') AS "list_id",
    json_extract(args, '$.counterparty') AS "counterparty",
    json_extract(args, '$.by') AS "by_address"
FROM logs WHERE event = 'EntryRemoved' AND canonical = 1;

CREATE VIEW wallet_bound AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    json_extract(args, '$.wallet') AS "wallet"
FROM logs WHERE event = 'WalletBound' AND canonical = 1;

CREATE VIEW receipt_recorded AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    json_extract(args, '$.receiptId') AS "receipt_id",
    json_extract(args, '$.payee') AS "payee",
    json_extract(args, '$.payer') AS "payer",
    json_extract(args, '$.token') AS "token",
    json_extract(args, '$.amount') AS "amount",
    json_extract(args, '$.purpose') AS "purpose",
    json_extract(args, '$.timestamp') AS "timestamp"
FROM logs WHERE event = 'ReceiptRecorded' AND canonical = 1;

CREATE VIEW receipt_acknowledged AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    json_extract(args, '$.receiptId') AS "receipt_id",
    json_extract(args, '$.payee') AS "payee",
    json_extract(args, '$.responseHash') AS "response_hash"
FROM logs WHERE event = 'ReceiptAcknowledged' AND canonical = 1;

CREATE VIEW provenance_recorded AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    json_extract(args, '$.recordId') AS "record_id",
    json_extract(args, '$.attester') AS "attester",
    json_extract(args, '$.subject') AS "subject",
    json_extract(args, '$.inputs') AS "inputs",
    json_extract(args, '$.runtime') AS "runtime",
    json_extract(args, '$.policy') AS "policy",
    json_extract(args, '$.uri') AS "uri",
    json_extract(args, '$.parents') AS "parents"
FROM logs WHERE event = 'ProvenanceRecorded' AND canonical = 1;

CREATE VIEW provenance_revoked AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    json_extract(args, '$.recordId') AS "record_id",
    json_extract(args, '$.by') AS "by_address",
    json_extract(args, '$.reason') AS "reason"
FROM logs WHERE event = 'ProvenanceRevoked' AND canonical = 1;

CREATE VIEW transfer AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    json_extract(args, '$.from') AS "from_address",
    json_extract(args, '$.to') AS "to_address",
    json_extract(args, '$.value') AS "value"
FROM logs WHERE event = 'Transfer' AND canonical = 1;

CREATE VIEW approval AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    json_extract(args, '$.owner') AS "owner",
    json_extract(args, '$.spender') AS "spender",
    json_extract(args, '$.value') AS "value"
FROM logs WHERE event = 'Approval' AND canonical = 1;
