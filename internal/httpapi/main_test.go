package httpapi_test

import (
	"os"
	"testing"

	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// onBoth runs fn as parallel subtests against the service on PostgreSQL and on SQLite.
func onBoth(t *testing.T, settings map[string]string, fn func(t *testing.T, env *apitest.Env)) {
	t.Helper()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, apitest.Start(t, db, settings))
		})
	}
}

func ptr[T any](v T) *T { return &v }

func testdbPostgres(t *testing.T) testdb.Database {
	return testdb.Database{Name: "postgres", URL: testdb.PostgresSchema(t)}
}
