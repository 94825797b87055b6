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
    (args::json ->> 'owner') AS "owner",
    (args::json ->> 'sessionKey') AS "session_key",
    (args::json ->> 'guardian') AS "guardian",
    (args::json ->> 'token') AS "token",
    (args::json ->> 'deposit') AS "deposit",
    (args::json ->> 'perPaymentCap') AS "per_payment_cap",
    (args::json ->> 'periodBudget') AS "period_budget",
    (args::json ->> 'periodSeconds')::bigint AS "period_seconds",
    (args::json ->> 'coSignThreshold') AS "co_sign_threshold",
    (args::json ->> 'validAfter')::bigint AS "valid_after",
    (args::json ->> 'expiresAt')::bigint AS "expires_at",
    (args::json ->> 'leaseSeconds')::bigint AS "lease_seconds",
    (args::json ->> 'leaseKeeper') AS "lease_keeper",
    (args::json ->> 'allowlistId') AS "allowlist_id",
    (args::json ->> 'metadata') AS "metadata"
FROM logs WHERE event = 'SessionOpened' AND canonical = 1;

CREATE VIEW session_topped_up AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    (args::json ->> 'from') AS "from_address",
    (args::json ->> 'amount') AS "amount",
    (args::json ->> 'deposit') AS "deposit"
FROM logs WHERE event = 'SessionToppedUp' AND canonical = 1;

CREATE VIEW payment_executed AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    (args::json ->> 'to') AS "to_address",
    (args::json ->> 'receiptId') AS "receipt_id",
    (args::json ->> 'amount') AS "amount",
    (args::json ->> 'purpose') AS "purpose",
    (args::json ->> 'nonce') AS "nonce"
FROM logs WHERE event = 'PaymentExecuted' AND canonical = 1;

CREATE VIEW payment_pending AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    (args::json ->> 'to') AS "to_address",
    (args::json ->> 'pendingId') AS "pending_id",
    (args::json ->> 'amount') AS "amount",
    (args::json ->> 'purpose') AS "purpose",
    (args::json ->> 'nonce') AS "nonce",
    (args::json ->> 'expiresAt')::bigint AS "expires_at"
FROM logs WHERE event = 'PaymentPending' AND canonical = 1;

CREATE VIEW payment_approved AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    (args::json ->> 'pendingId') AS "pending_id",
    (args::json ->> 'by') AS "by_address"
FROM logs WHERE event = 'PaymentApproved' AND canonical = 1;

CREATE VIEW payment_rejected AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    (args::json ->> 'pendingId') AS "pending_id",
    (args::json ->> 'by') AS "by_address"
FROM logs WHERE event = 'PaymentRejected' AND canonical = 1;

CREATE VIEW session_revoked AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    (args::json ->> 'by') AS "by_address"
FROM logs WHERE event = 'SessionRevoked' AND canonical = 1;

CREATE VIEW session_closed AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    (args::json ->> 'by') AS "by_address",
    (args::json ->> 'spent') AS "spent",
    (args::json ->> 'refund') AS "refund"
FROM logs WHERE event = 'SessionClosed' AND canonical = 1;

CREATE VIEW lease_renewed AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    (args::json ->> 'leaseExpiresAt')::bigint AS "lease_expires_at"
FROM logs WHERE event = 'LeaseRenewed' AND canonical = 1;

CREATE VIEW refund_deferred AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    (args::json ->> 'owner') AS "owner",
    (args::json ->> 'token') AS "token",
    (args::json ->> 'amount') AS "amount"
FROM logs WHERE event = 'RefundDeferred' AND canonical = 1;

CREATE VIEW refund_claimed AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    (args::json ->> 'owner') AS "owner",
    (args::json ->> 'token') AS "token",
    (args::json ->> 'to') AS "to_address",
    (args::json ->> 'amount') AS "amount"
FROM logs WHERE event = 'RefundClaimed' AND canonical = 1;

CREATE VIEW gateway_bound AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    (args::json ->> 'wallet') AS "wallet"
FROM logs WHERE event = 'GatewayBound' AND canonical = 1;

CREATE VIEW list_created AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    (args::json ->> 'listId') AS "list_id",
    (args::json ->> 'owner') AS "owner"
FROM logs WHERE event = 'ListCreated' AND canonical = 1;

CREATE VIEW list_ownership_transferred AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    (args::json ->> 'listId') AS "list_id",
    (args::json ->> 'previousOwner') AS "previous_owner",
    (args::json ->> 'newOwner') AS "new_owner"
FROM logs WHERE event = 'ListOwnershipTransferred' AND canonical = 1;

CREATE VIEW list_admin_set AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    (args::json ->> 'listId') AS "list_id",
    (args::json ->> 'admin') AS "admin",
    (args::json ->> 'enabled')::boolean AS "enabled"
FROM logs WHERE event = 'ListAdminSet' AND canonical = 1;

CREATE VIEW entry_set AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    (args::json ->> 'listId') AS "list_id",
    (args::json ->> 'counterparty') AS "counterparty",
    (args::json ->> 'by') AS "by_address",
    (args::json ->> 'allowed')::boolean AS "allowed",
    (args::json ->> 'maxPerPayment') AS "max_per_payment",
    (args::json ->> 'label') AS "label"
FROM logs WHERE event = 'EntrySet' AND canonical = 1;

CREATE VIEW entry_removed AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    (args::json ->> 'listId') AS "list_id",
    (args::json ->> 'counterparty') AS "counterparty",
    (args::json ->> 'by') AS "by_address"
FROM logs WHERE event = 'EntryRemoved' AND canonical = 1;

CREATE VIEW wallet_bound AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    (args::json ->> 'wallet') AS "wallet"
FROM logs WHERE event = 'WalletBound' AND canonical = 1;

CREATE VIEW receipt_recorded AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    (args::json ->> 'receiptId') AS "receipt_id",
    (args::json ->> 'payee') AS "payee",
    (args::json ->> 'payer') AS "payer",
    (args::json ->> 'token') AS "token",
    (args::json ->> 'amount') AS "amount",
    (args::json ->> 'purpose') AS "purpose",
    (args::json ->> 'timestamp')::bigint AS "timestamp"
FROM logs WHERE event = 'ReceiptRecorded' AND canonical = 1;

CREATE VIEW receipt_acknowledged AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    (args::json ->> 'receiptId') AS "receipt_id",
    (args::json ->> 'payee') AS "payee",
    (args::json ->> 'responseHash') AS "response_hash"
FROM logs WHERE event = 'ReceiptAcknowledged' AND canonical = 1;

CREATE VIEW provenance_recorded AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    (args::json ->> 'recordId') AS "record_id",
    (args::json ->> 'attester') AS "attester",
    (args::json ->> 'subject') AS "subject",
    (args::json ->> 'inputs') AS "inputs",
    (args::json ->> 'runtime') AS "runtime",
    (args::json ->> 'policy') AS "policy",
    (args::json ->> 'uri') AS "uri",
    (args::json -> 'parents') AS "parents"
FROM logs WHERE event = 'ProvenanceRecorded' AND canonical = 1;

CREATE VIEW provenance_revoked AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    (args::json ->> 'recordId') AS "record_id",
    (args::json ->> 'by') AS "by_address",
    (args::json ->> 'reason') AS "reason"
FROM logs WHERE event = 'ProvenanceRevoked' AND canonical = 1;

CREATE VIEW transfer AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    (args::json ->> 'from') AS "from_address",
    (args::json ->> 'to') AS "to_address",
    (args::json ->> 'value') AS "value"
FROM logs WHERE event = 'Transfer' AND canonical = 1;

CREATE VIEW approval AS SELECT
    block_number,
    log_index,
    block_hash,
    block_timestamp,
    tx_hash,
    address AS contract_address,
    session_id,
    (args::json ->> 'owner') AS "owner",
    (args::json ->> 'spender') AS "spender",
    (args::json ->> 'value') AS "value"
FROM logs WHERE event = 'Approval' AND canonical = 1;
