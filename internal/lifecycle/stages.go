package lifecycle

// The back office's stages are defined here once, as predicates on a
// transaction: the guards, the batch checks and the store's stage queries
// (internal/store, stageWhere) say the same, and a store test holds the SQL
// equal to these on both databases.

// depositConfirmed reports whether t's deposit has its confirmations.
func depositConfirmed(t *Transaction) bool {
	return t.Deposit != nil && t.Deposit.Status == DepositStatusConfirmed
}

// AwaitingFill reports whether t waits for its sale: the deposit confirmed, the
// order not filled, and nothing held by screening (held funds are not sold).
func AwaitingFill(t *Transaction) bool {
	return t.Status == DepositConfirming && depositConfirmed(t) && t.Screening.Proceeds()
}

// AwaitingPayout reports whether t waits for the bank transfer to its partner:
// completed (sold and settled), the payout not recorded.
func AwaitingPayout(t *Transaction) bool {
	return t.Status == Completed && t.PayoutSettledAt == nil
}
