package dashboard

import (
	"slices"

	"partnerd/internal/partnerusers"
)

// Who opens which section. Every role reads transactions; admins run the team,
// the keys and everything else; developers the webhooks (and the sandbox);
// finance the payouts, statements and exports (and reads the rest of the
// transactions' story, never moving one in the sandbox). The routes (allow) and the
// navigation read the same lists.
var (
	transactionRoles = []partnerusers.Role{}
	webhookRoles     = []partnerusers.Role{partnerusers.Admin, partnerusers.Developer}
	keyRoles         = []partnerusers.Role{partnerusers.Admin}
	payoutRoles      = []partnerusers.Role{partnerusers.Admin, partnerusers.Finance}
	teamRoles        = []partnerusers.Role{partnerusers.Admin}
	activityRoles    = []partnerusers.Role{partnerusers.Admin}
	// sandboxRoles run the sandbox simulator on a transaction's page.
	sandboxRoles = []partnerusers.Role{partnerusers.Admin, partnerusers.Developer}
)

// navEntry is one link of the navigation.
type navEntry struct {
	Section, Name, Path string
	Current             bool
}

var sections = []struct {
	section, name, path string
	roles               []partnerusers.Role
}{
	{"transactions", "Transactions", "/transactions", transactionRoles},
	{"webhooks", "Webhooks", "/webhooks", webhookRoles},
	{"keys", "API keys", "/keys", keyRoles},
	{"payouts", "Payouts", "/payouts", payoutRoles},
	{"team", "Team", "/team", teamRoles},
	{"activity", "Activity", "/activity", activityRoles},
}

// permits reports whether role is one of roles (none: every role).
func permits(role partnerusers.Role, roles []partnerusers.Role) bool {
	return len(roles) == 0 || slices.Contains(roles, role)
}

// navigation is the links role may follow, current marking section's.
func navigation(role partnerusers.Role, current string) []navEntry {
	var out []navEntry
	for _, s := range sections {
		if permits(role, s.roles) {
			out = append(out, navEntry{Section: s.section, Name: s.name, Path: BasePath + s.path, Current: s.section == current})
		}
	}
	return out
}
