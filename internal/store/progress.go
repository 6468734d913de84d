package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm/clause"

	"partnerd/internal/backoffice"
	"partnerd/internal/chain"
)

// chainProgressRow is a network's reading of its node, beside its cursor
// (chain_cursors): one row per network, overwritten by the instance scanning it.
type chainProgressRow struct {
	Network        string `gorm:"primaryKey"`
	HeadBlock      *int64
	HeadAt         *time.Time
	FinalizedBlock *int64
	FinalizedAt    *time.Time
	Finality       *string
	FinalitySince  *time.Time
	// Providers is the JSON array of chain.ProviderState.
	Providers string
	UpdatedAt time.Time
}

func (chainProgressRow) TableName() string { return "chain_progress" }

// SaveChainReading stores r as its network's reading, replacing the one before
// (one statement, outside any unit of work: the reading is a view of the node,
// not state the cursor depends on).
func (s *Store) SaveChainReading(ctx context.Context, r backoffice.ChainReading) error {
	providers := r.Providers
	if providers == nil {
		providers = []chain.ProviderState{}
	}
	js, err := json.Marshal(providers)
	if err != nil {
		return fmt.Errorf("chain progress of %s: %w", r.Network, err)
	}
	row := chainProgressRow{Network: r.Network, HeadBlock: r.Head, HeadAt: utcPtr(r.HeadAt),
		FinalizedBlock: r.Finalized, FinalizedAt: utcPtr(r.FinalizedAt), FinalitySince: utcPtr(r.FinalitySince),
		Providers: string(js), UpdatedAt: r.UpdatedAt.UTC()}
	if r.Finality != "" {
		row.Finality = &r.Finality
	}
	return s.write(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "network"}},
		DoUpdates: clause.AssignmentColumns([]string{"head_block", "head_at", "finalized_block", "finalized_at", "finality", "finality_since", "providers", "updated_at"}),
	}).Create(&row).Error
}

// ChainProgress returns each network's cursor (the scanned block, and when it
// moved) with the reading stored beside it; a network with neither is absent.
func (s *Store) ChainProgress(ctx context.Context) (map[string]backoffice.NetworkProgress, error) {
	var cursors []chainCursorRow
	if err := s.read(ctx).Find(&cursors).Error; err != nil {
		return nil, err
	}
	var readings []chainProgressRow
	if err := s.read(ctx).Find(&readings).Error; err != nil {
		return nil, err
	}
	out := make(map[string]backoffice.NetworkProgress, max(len(cursors), len(readings)))
	for _, c := range cursors {
		block, at := c.Block, c.UpdatedAt.UTC()
		out[c.Network] = backoffice.NetworkProgress{Network: c.Network, Scanned: &block, ScannedAt: &at}
	}
	for _, r := range readings {
		reading := &backoffice.ChainReading{Network: r.Network, Head: r.HeadBlock, HeadAt: utcPtr(r.HeadAt),
			Finalized: r.FinalizedBlock, FinalizedAt: utcPtr(r.FinalizedAt), FinalitySince: utcPtr(r.FinalitySince),
			UpdatedAt: r.UpdatedAt.UTC()}
		if r.Finality != nil {
			reading.Finality = *r.Finality
		}
		if err := json.Unmarshal([]byte(r.Providers), &reading.Providers); err != nil {
			return nil, fmt.Errorf("chain progress of %s: providers: %w", r.Network, err)
		}
		for i := range reading.Providers {
			reading.Providers[i].Since = reading.Providers[i].Since.UTC()
		}
		p := out[r.Network]
		p.Network, p.Reading = r.Network, reading
		out[r.Network] = p
	}
	return out, nil
}
