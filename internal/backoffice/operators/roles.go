package operators

import (
	"fmt"
	"slices"
	"strings"

	"partnerd/internal/kit/apperr"
)

// Role is what an operator may do. The operator contract names the role each
// operation needs (x-operator-role, and the table under "Roles"); the operator
// API enforces it for every operation, so the console, which calls that API, is
// held to it too.
type Role string

// The roles, least to most trusted in their own field (none includes another but
// Viewer, which every role includes).
const (
	// Viewer reads everything and changes nothing.
	Viewer Role = "viewer"
	// Support is Viewer on the operator API (webhook replays and notes are the
	// partner dashboard's).
	Support Role = "support"
	// Treasury moves money: fills, settlements, payouts, refunds.
	Treasury Role = "treasury"
	// Compliance decides on transactions held by screening.
	Compliance Role = "compliance"
	// Admin manages operators, their roles, partners and their keys.
	Admin Role = "admin"
)

// Roles lists every role (the contract's OperatorRole enum lists the same; a
// test keeps them equal).
var Roles = []Role{Viewer, Support, Treasury, Compliance, Admin}

// Has reports whether o may do what role r allows: every operator is a Viewer.
func (o *Operator) Has(r Role) bool {
	return r == Viewer || slices.Contains(o.Roles, r)
}

// ParseRoles reads a comma-separated list of roles ("treasury,compliance"): each
// known, at least one; duplicates are dropped and the order made canonical (the
// order of Roles). Errors: InvalidRequest naming the unknown role.
func ParseRoles(s string) ([]Role, error) {
	var names []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	return CheckRoles(names)
}

// CheckRoles is ParseRoles for a list already split.
func CheckRoles(names []string) ([]Role, error) {
	if len(names) == 0 {
		return nil, apperr.Field(apperr.InvalidRequest, "At least one role is required.", "roles", "one or more of viewer, support, treasury, compliance, admin")
	}
	var out []Role
	for _, r := range Roles {
		if slices.Contains(names, string(r)) {
			out = append(out, r)
		}
	}
	for _, n := range names {
		if !slices.Contains(Roles, Role(n)) {
			return nil, apperr.Field(apperr.InvalidRequest, fmt.Sprintf("Unknown role %q.", n), "roles", "one or more of viewer, support, treasury, compliance, admin")
		}
	}
	return out, nil
}

// JoinRoles is roles as stored and as the command line prints them: comma-separated.
func JoinRoles(roles []Role) string {
	s := make([]string, len(roles))
	for i, r := range roles {
		s[i] = string(r)
	}
	return strings.Join(s, ",")
}

// Forbidden is the refusal of an operator who lacks role r: 403 forbidden, the
// role named in the details.
func Forbidden(r Role) error {
	return apperr.Field(apperr.Forbidden, fmt.Sprintf("This needs the %s role.", r), "role", string(r))
}

// Knows reports whether r is one of Roles.
func Knows(r Role) bool { return slices.Contains(Roles, r) }
