package dashboard_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"partnerd/internal/lifecycle"
	"partnerd/internal/partnerusers"
	"partnerd/internal/testsupport/testdb"
)

// A transaction held by screening shows "under review" on its page in the
// dashboard, and nothing on the page names why (telling the customer would tip
// them off); a transaction not held shows no such mark.
func TestHeldTransactionShowsUnderReviewOnly(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			s := signedIn(t, db, partnerusers.Finance)
			sender := "0x" + strings.Repeat("7c", 20)
			s.Env.ListAddress(t, "Test SDN list", sender)
			held := create(t, s.API, "HELD-1", "3000.00")
			require.Equal(t, lifecycle.Counted, s.Env.Deposit(t, held, sender))
			clean := create(t, s.API, "CLEAN-1", "3000.00")
			require.Equal(t, lifecycle.Counted, s.Env.Deposit(t, clean, "0x"+strings.Repeat("2b", 20)))

			require.Equal(t, http.StatusOK, open(t, s.Browser, s.Base+"/transactions/"+held.Id.String()))
			require.Equal(t, "under review", text(t, s.Browser, "#under-review"))
			page := strings.ToLower(text(t, s.Browser, "main"))
			require.Contains(t, page, "being reviewed")
			for _, word := range []string{"sanction", "screen", "ofac", "sdn", "listed", "blocked", "compliance", sender} {
				require.NotContains(t, page, word, "the partner is never told why")
			}

			require.Equal(t, http.StatusOK, open(t, s.Browser, s.Base+"/transactions/"+clean.Id.String()))
			page = text(t, s.Browser, "main")
			require.NotContains(t, page, "under review")
			require.Contains(t, page, "CLEAN-1")
		})
	}
}
