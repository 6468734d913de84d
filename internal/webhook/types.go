package webhook

import (
	"fmt"
	"slices"

	"partnerd/internal/kit/apperr"
	"partnerd/internal/lifecycle"
)

// The rule of which event types an endpoint receives lives here, and only here:
// recording (the outbox keeps only the types the partner's endpoint receives),
// replay (refused for a type it no longer receives) and the test event (which
// takes a type it receives) all ask Receives, or EventsOf/TestTypeOf built on it.
//
// An endpoint's EnabledEvents is nil when it receives every type (registered
// without a list); otherwise it is the types it receives, in the order of
// EventTypes. A partner with no endpoint yet has every event recorded, so that
// the ones before the registration wait for it as before.

// EventTypes are the webhook event types in the order of the contract's
// WebhookEventType.
var EventTypes = []string{
	string(lifecycle.EventCreated),
	string(lifecycle.EventCompleted),
	string(lifecycle.EventDepositDetected),
	string(lifecycle.EventDepositConfirmed),
	string(lifecycle.EventFailed),
	string(lifecycle.EventExpired),
	string(lifecycle.EventRefunded),
	string(lifecycle.EventPayoutSettled),
}

// Receives reports whether events of type t are recorded for, and delivered to,
// endpoint e; with no endpoint (nil) every type is.
func Receives(e *Endpoint, t string) bool {
	return e == nil || e.EnabledEvents == nil || slices.Contains(e.EnabledEvents, t)
}

// EventsOf returns the types endpoint e receives, in the order of EventTypes.
func EventsOf(e *Endpoint) []string {
	out := make([]string, 0, len(EventTypes))
	for _, t := range EventTypes {
		if Receives(e, t) {
			out = append(out, t)
		}
	}
	return out
}

// TestTypeOf is the type of a test event to endpoint e: TestType when e receives
// it, else the first type e receives in the order of EventTypes.
func TestTypeOf(e *Endpoint) string {
	if Receives(e, TestType) {
		return TestType
	}
	if evs := EventsOf(e); len(evs) > 0 {
		return evs[0]
	}
	return TestType
}

// ParseEvents checks a requested list of event types (at least one, each known,
// none twice) and returns it in the order of EventTypes. Errors: InvalidRequest.
func ParseEvents(in []string) ([]string, error) {
	if len(in) == 0 {
		return nil, apperr.Field(apperr.InvalidRequest, "enabled_events must name at least one event type.",
			"/enabled_events", "must have at least 1 item")
	}
	for i, t := range in {
		if !slices.Contains(EventTypes, t) {
			return nil, apperr.Field(apperr.InvalidRequest, "enabled_events names an unknown event type.",
				fmt.Sprintf("/enabled_events/%d", i), fmt.Sprintf("%q is not an event type", t))
		}
		if slices.Contains(in[:i], t) {
			return nil, apperr.Field(apperr.InvalidRequest, "enabled_events names an event type twice.",
				fmt.Sprintf("/enabled_events/%d", i), fmt.Sprintf("%q is listed twice", t))
		}
	}
	out := make([]string, 0, len(in))
	for _, t := range EventTypes {
		if slices.Contains(in, t) {
			out = append(out, t)
		}
	}
	return out, nil
}
