-- Executed payments summed per session, counterparty (the payment's `to`) and hour of block time,
-- over canonical logs: what `/v1/spend` reads for every question of whole hours up to the
-- checkpoint, instead of every payment. Written in the transaction that writes (or orphans)
-- the payments. An amount is summed in nine limbs of nine decimal digits, most significant
-- first (a 256-bit amount has 78 digits), each limb a plain integer sum — exact, and carried by
-- the reader; a limb sum fits 64 bits for nine billion payments. A session or counterparty the
-- log lacks is ''.

CREATE TABLE spend_by_hour (
    session_id    TEXT COLLATE "C" NOT NULL,
    counterparty  TEXT COLLATE "C" NOT NULL,
    hour          BIGINT NOT NULL,
    payments      BIGINT NOT NULL,
    a0 BIGINT NOT NULL, a1 BIGINT NOT NULL, a2 BIGINT NOT NULL,
    a3 BIGINT NOT NULL, a4 BIGINT NOT NULL, a5 BIGINT NOT NULL,
    a6 BIGINT NOT NULL, a7 BIGINT NOT NULL, a8 BIGINT NOT NULL
);

-- An index rather than a primary key: a bulk load drops it, appends each batch's sums, and
-- merges them before building it again.
CREATE UNIQUE INDEX spend_by_hour_key ON spend_by_hour (session_id, counterparty, hour);

-- The payments already indexed.
INSERT INTO spend_by_hour (session_id, counterparty, hour, payments, a0, a1, a2, a3, a4, a5, a6, a7, a8)
SELECT
    COALESCE(session_id, ''),
    COALESCE(args::json ->> 'to', ''),
    block_timestamp - block_timestamp % 3600,
    COUNT(*),
    COALESCE(SUM(CAST(substr(lpad(args::json ->> 'amount', 81, '0'), 1, 9) AS BIGINT)), 0),
    COALESCE(SUM(CAST(substr(lpad(args::json ->> 'amount', 81, '0'), 10, 9) AS BIGINT)), 0),
    COALESCE(SUM(CAST(substr(lpad(args::json ->> 'amount', 81, '0'), 19, 9) AS BIGINT)), 0),
    COALESCE(SUM(CAST(substr(lpad(args::json ->> 'amount', 81, '0'), 28, 9) AS BIGINT)), 0),
    COALESCE(SUM(CAST(substr(lpad(args::json ->> 'amount', 81, '0'), 37, 9) AS BIGINT)), 0),
    COALESCE(SUM(CAST(substr(lpad(args::json ->> 'amount', 81, '0'), 46, 9) AS BIGINT)), 0),
    COALESCE(SUM(CAST(substr(lpad(args::json ->> 'amount', 81, '0'), 55, 9) AS BIGINT)), 0),
    COALESCE(SUM(CAST(substr(lpad(args::json ->> 'amount', 81, '0'), 64, 9) AS BIGINT)), 0),
    COALESCE(SUM(CAST(substr(lpad(args::json ->> 'amount', 81, '0'), 73, 9) AS BIGINT)), 0)
FROM logs WHERE event = 'PaymentExecuted' AND canonical = 1
GROUP BY 1, 2, 3;
