-- A log's topics (their 32-byte words end to end) and data as bytes rather than JSON and hex
-- text: a quarter of each row, written for every log and read back only by exports and the
-- raw fields of the API. (SQLite keeps the declared TEXT type; a BLOB value is stored as is.)

UPDATE logs SET
    topics = unhex(replace(replace(replace(replace(replace(topics, '0x', ''), '[', ''), ']', ''), '"', ''), ',', '')),
    data = unhex(substr(data, 3));
