package partners

import (
	"context"
	"time"
)

// WatchKeysOn is WatchKeys reading the keys' version at each of tick's ticks.
func (s *Service) WatchKeysOn(ctx context.Context, tick <-chan time.Time) { s.watchKeys(ctx, tick) }
