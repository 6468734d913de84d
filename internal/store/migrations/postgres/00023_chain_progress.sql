-- +goose Up
-- Each network's chain progress as the instance holding its scanner lock last read
-- it from the node (the scanned block is the cursor, in chain_cursors): written by
-- that instance at most once a second and only on change (a heartbeat every 10 s
-- otherwise), read by every instance's overview. NULL: not read yet.
CREATE TABLE chain_progress (
    network         text PRIMARY KEY,
    head_block      bigint,
    -- The head block and the finalized block, each with when it was last read.
    head_at         timestamptz,
    finalized_block bigint,
    finalized_at    timestamptz,
    -- tag, confirmations or unknown (chain.Finality*), and since when.
    finality        text,
    finality_since  timestamptz,
    -- Each provider's state, a JSON array of chain.ProviderState.
    providers       text NOT NULL DEFAULT '[]',
    updated_at      timestamptz NOT NULL
);

-- +goose Down
DROP TABLE chain_progress;
