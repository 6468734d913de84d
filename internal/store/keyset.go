package store

import (
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/cursor"
)

// afterPosition narrows a list ordered by (timeCol, idCol) descending to the rows
// after pos (the last row of the previous page). It is a row comparison, not an OR:
// PostgreSQL uses it as an index condition, so a deep page costs what the first one
// does, while an OR would be applied as a filter to every row before it. The column
// names must be trusted identifiers.
func afterPosition(db *gorm.DB, timeCol, idCol string, pos *cursor.Position) (*gorm.DB, error) {
	if pos == nil {
		return db, nil
	}
	id, err := uuid.Parse(pos.ID)
	if err != nil {
		return nil, apperr.New(apperr.InvalidCursor, "The cursor is invalid for this list and filters.")
	}
	return db.Where("("+timeCol+", "+idCol+") < (?, ?)", pos.Time.UTC(), id), nil
}

// beforePosition is afterPosition for a list ordered ascending: the rows after pos
// are the greater ones.
func beforePosition(db *gorm.DB, timeCol, idCol string, pos *cursor.Position) (*gorm.DB, error) {
	if pos == nil {
		return db, nil
	}
	id, err := uuid.Parse(pos.ID)
	if err != nil {
		return nil, apperr.New(apperr.InvalidCursor, "The cursor is invalid for this list and filters.")
	}
	return db.Where("("+timeCol+", "+idCol+") > (?, ?)", pos.Time.UTC(), id), nil
}

// within narrows db to rows whose col lies in [from, to]; nil bounds are open.
func within(db *gorm.DB, col string, from, to *time.Time) *gorm.DB {
	if from != nil {
		db = db.Where(col+" >= ?", from.UTC())
	}
	if to != nil {
		db = db.Where(col+" <= ?", to.UTC())
	}
	return db
}

// whereEq narrows db to rows whose col equals *v, when v is set (an optional
// filter of a list). col must be a trusted identifier.
func whereEq[T any](db *gorm.DB, col string, v *T) *gorm.DB {
	if v == nil {
		return db
	}
	return db.Where(col+" = ?", *v)
}
