// Package actor names who made a change: every use case that audits takes one
// Actor as a parameter, built by the transport that authenticated the caller
// (the partner API, the operator API and the console, the dashboard, the
// command line). Nothing finds it in a context: a signature says who acts.
package actor

import "github.com/google/uuid"

// Kind is what sort of caller acted.
type Kind string

// The kinds of actor.
const (
	// Operator is an operator, through the operator API or the console.
	Operator Kind = "operator"
	// PartnerUser is a person of a partner's team, on the dashboard.
	PartnerUser Kind = "partner_user"
	// PartnerKey is a partner's server, with its API key.
	PartnerKey Kind = "partner_key"
	// System is the service itself or the partnerd command run on a server (a
	// shell there is trusted without an operator key).
	System Kind = "system"
)

// Actor is who acted: its kind, its id (the operator's, the partner user's, the
// partner's whose key it is; none for System) and its name as people read it.
type Actor struct {
	Kind Kind
	ID   uuid.UUID
	Name string
	// ProposedBy is the operator who proposed the action when another approved it
	// (four eyes; the actor is the approver), nil otherwise.
	ProposedBy *uuid.UUID
	// HostUser is the host's user who ran the partnerd command (CommandLine), ""
	// for any other actor.
	HostUser string
}

// OfOperator is operator id, named name.
func OfOperator(id uuid.UUID, name string) Actor { return Actor{Kind: Operator, ID: id, Name: name} }

// OfPartnerUser is a partner's user id, named by their email address.
func OfPartnerUser(id uuid.UUID, email string) Actor {
	return Actor{Kind: PartnerUser, ID: id, Name: email}
}

// OfPartnerKey is partner id's server, calling with one of its API keys.
func OfPartnerKey(partnerID uuid.UUID, name string) Actor {
	return Actor{Kind: PartnerKey, ID: partnerID, Name: name}
}

// CLI is the partnerd command on a server, or the service itself, when no
// person is known.
var CLI = Actor{Kind: System, Name: "partnerd"}

// CommandLine is the partnerd command on a server run by the host's user user:
// audited as the command line's, naming them.
func CommandLine(user string) Actor { return Actor{Kind: System, Name: "partnerd", HostUser: user} }

// Approved is a, the operator approving an action proposer proposed.
func (a Actor) Approved(proposer uuid.UUID) Actor {
	a.ProposedBy = &proposer
	return a
}

// OperatorID is the operator who acted, or the nil UUID when no operator did
// (the command line, a partner's user or server): what the records that name an
// operator (history, audit rows, batches, resolutions) hold.
func (a Actor) OperatorID() uuid.UUID {
	if a.Kind == Operator {
		return a.ID
	}
	return uuid.Nil
}

// PartnerUserID is the partner's user who acted, or nil when none did.
func (a Actor) PartnerUserID() *uuid.UUID {
	if a.Kind != PartnerUser {
		return nil
	}
	id := a.ID
	return &id
}
