-- How many times the relayer has sent an agent's hand-over (`transferFrom` to its owner): one
-- that did not land is sent again while the relayer's signer still holds the agent, a few
-- times at most.
ALTER TABLE agents ADD COLUMN handover_attempts INTEGER NOT NULL DEFAULT 0;
