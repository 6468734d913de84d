package store

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"partnerd/internal/jobs"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/webhook"
)

type endpointRow struct {
	PartnerID               uuid.UUID `gorm:"primaryKey"`
	URL                     string    `gorm:"column:url"`
	Enabled                 bool
	Secret                  string
	SecretKey               *string
	PreviousSecret          *string
	PreviousSecretKey       *string
	PreviousSecretExpiresAt *time.Time
	// EnabledEvents is the event types it receives, comma-separated (eventList);
	// NULL when it receives every type.
	EnabledEvents *string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// eventList is how an endpoint's enabled event types are stored: their names
// joined by commas, nil (NULL) for every type. The names have no comma, and the
// recording's filter (receivesEvent) reads the list as stored.
func eventList(types []string) *string {
	if types == nil {
		return nil
	}
	s := strings.Join(types, ",")
	return &s
}

// eventTypes is the enabled event types of a stored list (nil: every type).
func eventTypes(list *string) []string {
	if list == nil {
		return nil
	}
	return strings.Split(*list, ",")
}

// receivesEvent is the condition, on the partner's endpoint w, that it takes
// events of a type: webhook.Receives in SQL, for recording, which has no round
// trip to spare for reading the endpoint first. Its one parameter is
// receivesPattern(type). storetest checks that the two agree.
const receivesEvent = "w.enabled_events IS NULL OR ',' || w.enabled_events || ',' LIKE ?"

// receivesPattern is receivesEvent's parameter for type t (event type names
// have no LIKE wildcard: lowercase letters and dots).
func receivesPattern(t string) string { return "%," + t + ",%" }

// endpointDomain is the endpoint of row r, its secrets opened.
func (s *Store) endpointDomain(r *endpointRow) (*webhook.Endpoint, error) {
	ctx := webhookContext(r.PartnerID)
	secret, err := s.open(r.SecretKey, &r.Secret, ctx)
	if err != nil {
		return nil, err
	}
	previous, err := s.open(r.PreviousSecretKey, r.PreviousSecret, ctx)
	if err != nil {
		return nil, err
	}
	return &webhook.Endpoint{
		PartnerID: r.PartnerID, URL: r.URL, Enabled: r.Enabled, Secret: *secret, PreviousSecret: previous,
		PreviousSecretExpiresAt: utcPtr(r.PreviousSecretExpiresAt), EnabledEvents: eventTypes(r.EnabledEvents),
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}, nil
}

func (endpointRow) TableName() string { return "webhook_endpoints" }

// EndpointOf returns the partner's webhook endpoint, or apperr NotFound.
func (s *Store) EndpointOf(ctx context.Context, partnerID uuid.UUID) (*webhook.Endpoint, error) {
	return s.endpointOf(s.read(ctx), partnerID)
}

// EndpointOf is Store.EndpointOf in the unit of work.
func (tx *Tx) EndpointOf(ctx context.Context, partnerID uuid.UUID) (*webhook.Endpoint, error) {
	return tx.s.endpointOf(tx.db.WithContext(ctx), partnerID)
}

func (s *Store) endpointOf(db *gorm.DB, partnerID uuid.UUID) (*webhook.Endpoint, error) {
	var r endpointRow
	if err := db.Where("partner_id = ?", partnerID).Take(&r).Error; err != nil {
		return nil, notFound(err, "webhook endpoint")
	}
	return s.endpointDomain(&r)
}

// InsertEndpoint inserts e unless the partner already has an endpoint, and reports
// whether it did: of two concurrent first registrations exactly one inserts.
func (s *Store) InsertEndpoint(ctx context.Context, e *webhook.Endpoint) (bool, error) {
	return s.insertEndpoint(s.write(ctx), e)
}

// InsertEndpoint is Store.InsertEndpoint in the unit of work.
func (tx *Tx) InsertEndpoint(ctx context.Context, e *webhook.Endpoint) (bool, error) {
	return tx.s.insertEndpoint(tx.db.WithContext(ctx), e)
}

func (s *Store) insertEndpoint(db *gorm.DB, e *webhook.Endpoint) (bool, error) {
	keyID, secret := s.seal(&e.Secret, webhookContext(e.PartnerID))
	prevID, prev := s.seal(e.PreviousSecret, webhookContext(e.PartnerID))
	res := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&endpointRow{
		PartnerID: e.PartnerID, URL: e.URL, Enabled: e.Enabled, Secret: *secret, SecretKey: keyID, PreviousSecret: prev, PreviousSecretKey: prevID,
		PreviousSecretExpiresAt: e.PreviousSecretExpiresAt, EnabledEvents: eventList(e.EnabledEvents), CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt,
	})
	return res.RowsAffected == 1, res.Error
}

// UpdateEndpoint sets the partner's endpoint URL and enabled flag, and its
// enabled event types unless events is nil, and reports whether this write is the one that turned deliveries on (it was disabled):
// a conditional UPDATE, so of concurrent enablers exactly one sees the switch.
// Errors: NotFound.
func (s *Store) UpdateEndpoint(ctx context.Context, partnerID uuid.UUID, url string, enabled bool, events []string, at time.Time) (bool, error) {
	return updateEndpoint(s.write(ctx), partnerID, url, enabled, events, at)
}

// UpdateEndpoint is Store.UpdateEndpoint in the unit of work.
func (tx *Tx) UpdateEndpoint(ctx context.Context, partnerID uuid.UUID, url string, enabled bool, events []string, at time.Time) (bool, error) {
	return updateEndpoint(tx.db.WithContext(ctx), partnerID, url, enabled, events, at)
}

func updateEndpoint(db *gorm.DB, partnerID uuid.UUID, url string, enabled bool, events []string, at time.Time) (bool, error) {
	set := map[string]any{"url": url, "enabled": enabled, "updated_at": at}
	if events != nil {
		set["enabled_events"] = *eventList(events)
	}
	if enabled {
		res := db.Model(&endpointRow{}).Where("partner_id = ? AND enabled = ?", partnerID, false).Updates(set)
		if res.Error != nil || res.RowsAffected == 1 {
			return res.RowsAffected == 1, res.Error
		}
	}
	res := db.Model(&endpointRow{}).Where("partner_id = ?", partnerID).Updates(set)
	if res.Error == nil && res.RowsAffected == 0 {
		return false, apperr.New(apperr.NotFound, "The webhook endpoint was not found.")
	}
	return false, res.Error
}

// DisableEndpoint turns deliveries off (the receiver answered 410 Gone), leaving
// every other field as it is.
func (s *Store) DisableEndpoint(ctx context.Context, partnerID uuid.UUID, at time.Time) error {
	return s.write(ctx).Model(&endpointRow{}).Where("partner_id = ?", partnerID).
		Updates(map[string]any{"enabled": false, "updated_at": at}).Error
}

// RotateSecret makes secret the signing secret and the current one the previous
// secret, signing until oldUntil, in one statement (the right-hand sides read the
// row as it was), so concurrent rotations each take effect in turn and none is
// silently lost. Errors: NotFound.
func (s *Store) RotateSecret(ctx context.Context, partnerID uuid.UUID, secret string, oldUntil, at time.Time) error {
	return s.rotateSecret(s.write(ctx), partnerID, secret, oldUntil, at)
}

// RotateSecret is Store.RotateSecret in the unit of work.
func (tx *Tx) RotateSecret(ctx context.Context, partnerID uuid.UUID, secret string, oldUntil, at time.Time) error {
	return tx.s.rotateSecret(tx.db.WithContext(ctx), partnerID, secret, oldUntil, at)
}

func (s *Store) rotateSecret(db *gorm.DB, partnerID uuid.UUID, secret string, oldUntil, at time.Time) error {
	keyID, sealed := s.seal(&secret, webhookContext(partnerID))
	res := db.Model(&endpointRow{}).Where("partner_id = ?", partnerID).
		Updates(map[string]any{"previous_secret": gorm.Expr("secret"), "previous_secret_key": gorm.Expr("secret_key"),
			"secret": *sealed, "secret_key": keyID, "previous_secret_expires_at": oldUntil, "updated_at": at})
	if res.Error == nil && res.RowsAffected == 0 {
		return apperr.New(apperr.NotFound, "The webhook endpoint was not found.")
	}
	return res.Error
}

// webhookEventRow is the events table with its delivery columns.
type webhookEventRow struct {
	ID            uuid.UUID `gorm:"primaryKey"`
	PartnerID     uuid.UUID
	TransactionID uuid.UUID
	Type          string
	Payload       string
	CreatedAt     time.Time
	PublishStatus string
	Attempts      int
	CycleAttempts int
	LastAttemptAt *time.Time
	NextAttemptAt *time.Time
}

func (webhookEventRow) TableName() string { return "events" }

func (r *webhookEventRow) domain() *webhook.Event {
	return &webhook.Event{
		ID: r.ID, PartnerID: r.PartnerID, TransactionID: r.TransactionID, Type: r.Type, Payload: []byte(r.Payload),
		CreatedAt: r.CreatedAt.UTC(), PublishStatus: r.PublishStatus, Attempts: r.Attempts, CycleAttempts: r.CycleAttempts,
		LastAttemptAt: utcPtr(r.LastAttemptAt), NextAttemptAt: utcPtr(r.NextAttemptAt),
	}
}

// EventByID returns an event; a non-nil partnerID scopes the lookup.
func (s *Store) EventByID(ctx context.Context, partnerID *uuid.UUID, id uuid.UUID) (*webhook.Event, error) {
	db := s.read(ctx).Where("id = ?", id)
	if partnerID != nil {
		db = db.Where("partner_id = ?", *partnerID)
	}
	var r webhookEventRow
	if err := db.Take(&r).Error; err != nil {
		return nil, notFound(err, "webhook event")
	}
	return r.domain(), nil
}

type attemptRow struct {
	ID              int64 `gorm:"primaryKey"`
	EventID         uuid.UUID
	AttemptedAt     time.Time
	StatusCode      *int
	DurationMS      int `gorm:"column:duration_ms"`
	Error           *string
	ResponseExcerpt *string
}

func (attemptRow) TableName() string { return "webhook_attempts" }

// SaveEventState writes the event's delivery fields and appends a (when not nil),
// in one transaction, and reports whether the event is marked requeued (a replay
// or an endpoint enabled during the attempt); the mark is left set, and the event
// then stays pending, due at requeueAt.
func (s *Store) SaveEventState(ctx context.Context, e *webhook.Event, a *webhook.Attempt, requeueAt time.Time) (bool, error) {
	if requeued, done, err := s.eng.saveEventState(ctx, s, e, a, requeueAt); done {
		return requeued, err
	}
	var requeued bool
	err := s.Transact(ctx, func(ctx context.Context, tx *Tx) error {
		var err error
		requeued, err = tx.SaveEventState(ctx, e, a, requeueAt)
		return err
	})
	return requeued, err
}

// SaveEventState is Store.SaveEventState in the unit of work, statement by
// statement.
func (tx *Tx) SaveEventState(ctx context.Context, e *webhook.Event, a *webhook.Attempt, requeueAt time.Time) (bool, error) {
	db := tx.db.WithContext(ctx)
	// The times in the CASE are typed by the engine (PostgreSQL would take
	// bare parameters for text).
	at := tx.s.eng.timeParam()
	next := gorm.Expr("CASE WHEN requeued THEN "+at+" ELSE "+at+" END", requeueAt, e.NextAttemptAt)
	res := db.Model(&webhookEventRow{}).Where("id = ?", e.ID).Updates(map[string]any{
		"publish_status": gorm.Expr("CASE WHEN requeued THEN ? ELSE ? END", webhook.Pending, e.PublishStatus),
		"attempts":       e.Attempts, "cycle_attempts": e.CycleAttempts, "last_attempt_at": e.LastAttemptAt,
		"next_attempt_at": next,
	})
	if res.Error != nil {
		return false, res.Error
	}
	if res.RowsAffected == 0 {
		return false, apperr.New(apperr.NotFound, "The webhook event was not found.")
	}
	var marks []bool
	if err := db.Model(&webhookEventRow{}).Where("id = ?", e.ID).Pluck("requeued", &marks).Error; err != nil {
		return false, err
	}
	requeued := len(marks) == 1 && marks[0]
	if a == nil {
		return requeued, nil
	}
	return requeued, db.Create(&attemptRow{EventID: e.ID, AttemptedAt: a.AttemptedAt, StatusCode: a.StatusCode, DurationMS: a.DurationMS,
		Error: a.Error, ResponseExcerpt: a.ResponseExcerpt}).Error
}

// TakeDelivery is what a delivery attempt starts from: it clears the event's
// requeued mark (reporting whether it was set) and returns the event and its
// partner's endpoint (nil when the partner has none). apperr NotFound when the
// event is gone.
func (s *Store) TakeDelivery(ctx context.Context, id uuid.UUID) (*webhook.Event, *webhook.Endpoint, bool, error) {
	if ev, ep, requeued, done, err := s.eng.takeDelivery(ctx, s, id); done {
		return ev, ep, requeued, err
	}
	var (
		ev       *webhook.Event
		ep       *webhook.Endpoint
		requeued bool
	)
	err := s.Transact(ctx, func(ctx context.Context, tx *Tx) error {
		var err error
		ev, ep, requeued, err = tx.TakeDelivery(ctx, id)
		return err
	})
	return ev, ep, requeued, err
}

// TakeDelivery is Store.TakeDelivery in the unit of work, in three statements.
func (tx *Tx) TakeDelivery(ctx context.Context, id uuid.UUID) (*webhook.Event, *webhook.Endpoint, bool, error) {
	s := tx.store()
	requeued, err := s.TakeRequeue(ctx, id)
	if err != nil {
		return nil, nil, false, err
	}
	ev, err := s.EventByID(ctx, nil, id)
	if err != nil {
		return nil, nil, false, err
	}
	ep, err := s.EndpointOf(ctx, ev.PartnerID)
	if apperr.CodeOf(err) == apperr.NotFound {
		return ev, nil, requeued, nil
	}
	if err != nil {
		return nil, nil, false, err
	}
	return ev, ep, requeued, nil
}

// RequeuePending marks every pending event of the partner requeued, due at, in
// one statement, and returns their ids (oldest first).
func (s *Store) RequeuePending(ctx context.Context, partnerID uuid.UUID, at time.Time) ([]uuid.UUID, error) {
	var rows []idAt
	err := s.write(ctx).Raw(`UPDATE events SET requeued = ?, next_attempt_at = ?
WHERE partner_id = ? AND publish_status = ? RETURNING id, created_at`, true, at, partnerID, webhook.Pending).Scan(&rows).Error
	if err != nil {
		return nil, err
	}
	return oldestFirst(rows), nil
}

// RequeueWaiting marks the oldest limit of the partner's events waiting for a
// retry (pending, their next attempt after at, not marked already) requeued,
// due at, in one statement, and returns their ids (oldest first). An event
// whose attempt is running now (its next attempt was due) is left alone, and of
// two callers at once each event is marked by one only (the outer conditions
// are checked again on the row as it is when written).
func (s *Store) RequeueWaiting(ctx context.Context, partnerID uuid.UUID, at time.Time, limit int) ([]uuid.UUID, error) {
	var rows []idAt
	err := s.write(ctx).Raw(`UPDATE events SET requeued = ?, next_attempt_at = ?
WHERE id IN (SELECT id FROM events WHERE partner_id = ? AND publish_status = ? AND next_attempt_at > ? AND NOT requeued
             ORDER BY created_at, id LIMIT ?)
  AND publish_status = ? AND next_attempt_at > ? AND NOT requeued
RETURNING id, created_at`,
		true, at, partnerID, webhook.Pending, at, limit, webhook.Pending, at).Scan(&rows).Error
	if err != nil {
		return nil, err
	}
	return oldestFirst(rows), nil
}

// idAt is an event's id and creation time.
type idAt struct {
	ID        uuid.UUID
	CreatedAt time.Time
}

// oldestFirst is the ids of rows by creation, oldest first.
func oldestFirst(rows []idAt) []uuid.UUID {
	slices.SortFunc(rows, func(a, b idAt) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return bytes.Compare(a.ID[:], b.ID[:])
	})
	ids := make([]uuid.UUID, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids
}

// ListEvents returns a page of the partner's events by (created_at, id) descending.
func (s *Store) ListEvents(ctx context.Context, partnerID uuid.UUID, q webhook.ListQuery) ([]*webhook.Event, error) {
	db := s.read(ctx).Where("partner_id = ?", partnerID)
	db = whereEq(db, "type", q.Type)
	db = whereEq(db, "transaction_id", q.TransactionID)
	db = whereEq(db, "publish_status", q.PublishStatus)
	db = within(db, "created_at", q.From, q.To)
	db, err := afterPosition(db, "created_at", "id", q.After)
	if err != nil {
		return nil, err
	}
	var rows []webhookEventRow
	if err := db.Order("created_at DESC, id DESC").Limit(q.Limit).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]*webhook.Event, len(rows))
	for i := range rows {
		out[i] = rows[i].domain()
	}
	return out, nil
}

// AppendTestEvent writes e, a test event of no transaction (transaction_id
// NULL), and, when the partner's endpoint is enabled, its delivery job, in this
// unit of work, as AppendEvent does for a transaction's events.
func (tx *Tx) AppendTestEvent(ctx context.Context, e *webhook.Event) error {
	var enabled sql.NullBool
	err := tx.db.WithContext(ctx).Raw(`INSERT INTO events (id, partner_id, transaction_id, type, payload, created_at)
	VALUES (?, ?, NULL, ?, ?, ?)
	RETURNING (SELECT w.enabled FROM webhook_endpoints w WHERE w.partner_id = events.partner_id)`,
		e.ID, e.PartnerID, e.Type, string(e.Payload), e.CreatedAt).Row().Scan(&enabled)
	if err != nil {
		return fmt.Errorf("append test event: %w", err)
	}
	if !enabled.Bool {
		return nil
	}
	return tx.Enqueue(ctx, jobs.DeliverEventArgs{EventID: e.ID}, nil)
}

// AttemptsOf returns an event's attempts, oldest first.
func (s *Store) AttemptsOf(ctx context.Context, eventID uuid.UUID) ([]webhook.Attempt, error) {
	var rows []attemptRow
	if err := s.read(ctx).Where("event_id = ?", eventID).Order("id").Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]webhook.Attempt, len(rows))
	for i, r := range rows {
		out[i] = webhook.Attempt{AttemptedAt: r.AttemptedAt.UTC(), StatusCode: r.StatusCode, DurationMS: r.DurationMS, Error: r.Error,
			ResponseExcerpt: r.ResponseExcerpt}
	}
	return out, nil
}

// PurgeEvents deletes events created before t, with their attempts.
func (s *Store) PurgeEvents(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := s.Transact(ctx, func(ctx context.Context, tx *Tx) error {
		sub := tx.db.Model(&webhookEventRow{}).Select("id").Where("created_at < ?", before)
		if err := tx.db.Where("event_id IN (?)", sub).Delete(&attemptRow{}).Error; err != nil {
			return err
		}
		res := tx.db.Where("created_at < ?", before).Delete(&webhookEventRow{})
		n = res.RowsAffected
		return res.Error
	})
	return n, err
}

// Requeue marks the event requeued and pending, due at.
func (s *Store) Requeue(ctx context.Context, partnerID *uuid.UUID, id uuid.UUID, at time.Time) (*webhook.Event, error) {
	db := s.write(ctx).Model(&webhookEventRow{}).Where("id = ?", id)
	if partnerID != nil {
		db = db.Where("partner_id = ?", *partnerID)
	}
	res := db.Updates(map[string]any{"requeued": true, "publish_status": webhook.Pending, "next_attempt_at": at})
	if res.Error != nil {
		return nil, res.Error
	}
	if res.RowsAffected == 0 {
		return nil, apperr.New(apperr.NotFound, "The webhook event was not found.")
	}
	return s.EventByID(ctx, partnerID, id)
}

// TakeRequeue clears the requeued mark, reporting whether it was set.
func (s *Store) TakeRequeue(ctx context.Context, id uuid.UUID) (bool, error) {
	res := s.write(ctx).Model(&webhookEventRow{}).Where("id = ? AND requeued = ?", id, true).Update("requeued", false)
	return res.RowsAffected == 1, res.Error
}

// The sweep's conditions, written as the predicates of the partial indexes that
// serve them (events_requeued_idx, events_unqueued_idx), values in the text: the
// sweep then reads the few rows it looks for, not the whole events table (a
// condition with parameters matches no partial index in a plan made for any
// value, nor on SQLite).
var (
	requeuedEvents = "requeued"
	unqueuedEvents = "e.publish_status = '" + webhook.Pending + "' AND e.attempts = 0 AND NOT e.requeued"
)

// StaleRequeues returns events that should have a delivery job and may have
// none: those marked requeued since before olderThan (by their next_attempt_at,
// which a requeue sets), and never-attempted pending events created before
// olderThan of partners whose endpoint is enabled (an event appended while its
// endpoint was being enabled, in a unit of work the enabling could not see yet).
func (s *Store) StaleRequeues(ctx context.Context, olderThan time.Time, limit int) ([]uuid.UUID, error) {
	var ids []uuid.UUID
	err := s.read(ctx).Model(&webhookEventRow{}).Where(requeuedEvents+" AND next_attempt_at < ?", olderThan).
		Order("next_attempt_at").Limit(limit).Pluck("id", &ids).Error
	if err != nil {
		return nil, err
	}
	var unqueued []uuid.UUID
	err = s.read(ctx).Table("events AS e").Select("e.id").
		Joins("JOIN webhook_endpoints w ON w.partner_id = e.partner_id AND w.enabled = ?", true).
		Where(unqueuedEvents+" AND e.created_at < ?", olderThan).
		Order("e.created_at").Limit(limit).Pluck("e.id", &unqueued).Error
	return append(ids, unqueued...), err
}
