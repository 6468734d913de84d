package config

import (
	"errors"
	"fmt"
	"time"
)

// The adapters of the liquidity (LIQUIDITY) and payout (PAYOUT) ports.
const (
	AdapterSimulated = "simulated"
	AdapterOperator  = "operator"
)

// The staging settlement modes (SETTLEMENT_MODE).
const (
	SettlementSimulator = "simulator"
	SettlementAuto      = "auto"
)

// Settlement is how a transaction moves after its deposit is confirmed.
type Settlement struct {
	// Liquidity and Payout are AdapterSimulated or AdapterOperator.
	Liquidity, Payout string
	// Mode is SettlementSimulator or SettlementAuto; production ignores it
	// (always SettlementSimulator there, which with operator adapters does nothing).
	Mode string
	// Delay is SIMULATED_SETTLEMENT_DELAY: how long after the fill auto mode settles.
	Delay time.Duration
}

// loadSettlement reads LIQUIDITY, PAYOUT, SETTLEMENT_MODE and
// SIMULATED_SETTLEMENT_DELAY. Staging defaults to the simulated adapters driven by
// the sandbox simulator; production to the operator adapters and refuses the
// simulated ones (its payouts are real).
func loadSettlement(env Environment, get func(key, def string) string, bad func(string, error)) Settlement {
	def := AdapterSimulated
	if env == Production {
		def = AdapterOperator
	}
	s := Settlement{Liquidity: get("LIQUIDITY", def), Payout: get("PAYOUT", def), Mode: get("SETTLEMENT_MODE", SettlementSimulator)}
	for key, v := range map[string]string{"LIQUIDITY": s.Liquidity, "PAYOUT": s.Payout} {
		switch {
		case v != AdapterSimulated && v != AdapterOperator:
			bad(key, fmt.Errorf("%q: want simulated or operator", v))
		case v == AdapterSimulated && env == Production:
			bad(key, errors.New("production settles for real; the simulated adapter is for staging (use operator)"))
		}
	}
	if s.Mode != SettlementSimulator && s.Mode != SettlementAuto {
		bad("SETTLEMENT_MODE", fmt.Errorf("%q: want simulator or auto", s.Mode))
	}
	if env == Production {
		s.Mode = SettlementSimulator
	}
	s.Delay = duration(get("SIMULATED_SETTLEMENT_DELAY", "5s"), "SIMULATED_SETTLEMENT_DELAY", bad)
	return s
}
