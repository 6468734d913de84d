package store

import (
	"github.com/shopspring/decimal"
	"gorm.io/gorm"
)

// sumDecimal returns the exact sum of column over the rows q selects, as each
// database can give it exactly (engine.sumDecimal). column must be a trusted
// identifier.
func (s *Store) sumDecimal(q *gorm.DB, column string) (decimal.Decimal, error) {
	return s.eng.sumDecimal(q, column)
}
