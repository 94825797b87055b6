-- A log's topics (their 32-byte words end to end) and data as bytes rather than JSON and hex
-- text: a quarter of each row, written for every log and read back only by exports and the
-- raw fields of the API.

ALTER TABLE logs
    ALTER COLUMN topics TYPE BYTEA
        USING decode(translate(replace(topics, '0x', ''), '[]",', ''), 'hex'),
    ALTER COLUMN data TYPE BYTEA USING decode(substr(data, 3), 'hex');
