-- +goose Up
-- The overview's failing endpoints say since when they fail: the first failed
-- attempt after the endpoint's last success, found from the partner's latest
-- delivered event (an index lookup, not a scan of every delivered event).
CREATE INDEX events_delivered_idx ON events (partner_id, last_attempt_at)
    WHERE publish_status = 'delivered';

-- +goose Down
DROP INDEX events_delivered_idx;
