package store

import (
	"fmt"

	"github.com/shopspring/decimal"
	"gorm.io/gorm"
)

// sumDecimal returns the exact sum of column over the rows q selects. PostgreSQL
// sums its numeric column in the database (no rows are loaded); SQLite keeps
// amounts as decimal text, which its SUM would turn into a float, so there the
// values are streamed and added in Go. column must be a trusted identifier.
func (s *Store) sumDecimal(q *gorm.DB, column string) (decimal.Decimal, error) {
	if s.dialect == Postgres {
		var sum decimal.NullDecimal
		if err := q.Select(fmt.Sprintf("COALESCE(SUM(%s), 0)", column)).Scan(&sum).Error; err != nil {
			return decimal.Decimal{}, err
		}
		return sum.Decimal, nil
	}
	rows, err := q.Select(column).Rows()
	if err != nil {
		return decimal.Decimal{}, err
	}
	defer rows.Close()
	total := decimal.Zero
	for rows.Next() {
		var v decimal.Decimal
		if err := rows.Scan(&v); err != nil {
			return decimal.Decimal{}, err
		}
		total = total.Add(v)
	}
	return total, rows.Err()
}
