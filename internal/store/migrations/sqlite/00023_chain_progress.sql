-- +goose Up
-- Each network's chain progress as the instance holding its scanner lock last read
-- it from the node (the scanned block is the cursor, in chain_cursors): written by
-- that instance at most once a second and only on change (a heartbeat every 10 s
-- otherwise), read by every instance's overview. NULL: not read yet.
CREATE TABLE chain_progress (
    network         TEXT PRIMARY KEY,
    head_block      INTEGER,
    -- The head block and the finalized block, each with when it was last read.
    head_at         DATETIME,
    finalized_block INTEGER,
    finalized_at    DATETIME,
    -- tag, confirmations or unknown (chain.Finality*), and since when.
    finality        TEXT,
    finality_since  DATETIME,
    -- Each provider's state, a JSON array of chain.ProviderState.
    providers       TEXT NOT NULL DEFAULT '[]',
    updated_at      DATETIME NOT NULL
);

-- +goose Down
DROP TABLE chain_progress;
