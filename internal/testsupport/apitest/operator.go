package apitest

import (
	"context"
	"net/http"
	"partnerd/internal/store"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/operatorclient"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/contract/contractcheck"
	"partnerd/internal/operatorapi"
)

// Stop stops the service now (graceful, as on SIGTERM); the database stays, so a
// test can Start another service on it. Stopping twice is harmless.
func (e *Env) Stop() { e.stop() }

// OperatorURL is the operator API's base address.
func (e *Env) OperatorURL() string { return e.Root + operatorapi.BasePath }

// NewOperator creates an operator holding every role and returns its API key:
// the tests of what an operator does; NewOperatorWith holds an operator to roles.
func (e *Env) NewOperator(t *testing.T) string {
	t.Helper()
	_, key := e.NewOperatorWith(t, "Test operator "+t.Name(), operators.Roles...)
	return key
}

// NewOperatorWith creates an operator named name holding roles and returns its id
// and API key.
func (e *Env) NewOperatorWith(t *testing.T, name string, roles ...operators.Role) (uuid.UUID, string) {
	t.Helper()
	var key string
	var o *operators.Operator
	err := e.Store.Transact(context.Background(), func(ctx context.Context, tx *store.Tx) (err error) {
		o, key, err = e.App.Operators().Create(ctx, tx, name, roles)
		return err
	})
	require.NoError(t, err)
	return o.ID, key
}

// OperatorClient returns a typed operator client that sends key as X-API-KEY (none
// when key is "") and checks every response against openapi/operator.yaml.
func (e *Env) OperatorClient(t *testing.T, key string) *operatorclient.ClientWithResponses {
	t.Helper()
	c, err := operatorclient.NewClientWithResponses(e.OperatorURL(),
		operatorclient.WithHTTPClient(e.OperatorHTTPClient(t)),
		operatorclient.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			if key != "" {
				req.Header.Set("X-API-KEY", key)
			}
			return nil
		}))
	require.NoError(t, err)
	return c
}

// OperatorHTTPClient is HTTPClient for the operator API: responses are checked
// against openapi/operator.yaml.
func (e *Env) OperatorHTTPClient(t *testing.T) *http.Client {
	t.Helper()
	check, err := contractcheck.Operator(contractcheck.AsDeclared)
	require.NoError(t, err)
	return checkedClient(t, check)
}
