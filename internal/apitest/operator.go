package apitest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/stretchr/testify/require"

	"partnerd/gen/operatorclient"
	"partnerd/internal/operatorapi"
)

// Stop stops the service now (graceful, as on SIGTERM); the database stays, so a
// test can Start another service on it. Stopping twice is harmless.
func (e *Env) Stop() { e.stop() }

// OperatorURL is the operator API's base address.
func (e *Env) OperatorURL() string { return e.Root + operatorapi.BasePath }

// NewOperator creates an operator and returns its API key.
func (e *Env) NewOperator(t *testing.T) string {
	t.Helper()
	_, key, err := e.App.Operators().Create(context.Background(), "Test operator "+t.Name())
	require.NoError(t, err)
	return key
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
	spec, r, err := operatorContract(operatorapi.BasePath)
	require.NoError(t, err)
	v := &opContract{spec: spec, route: r}
	return &http.Client{Timeout: 30 * time.Second, Transport: &validating{t: t, contract: "the operator contract", check: v.validate, next: http.DefaultTransport}}
}

// opContract checks answers against the operator contract.
type opContract struct {
	spec  *openapi3.T
	route routers.Router
}

// validate is Env.validate against the operator contract.
func (v *opContract) validate(req *http.Request, reqBody []byte, resp *http.Response, body []byte) error {
	if resp.Header.Get("X-Request-Id") == "" {
		return errors.New("no X-Request-Id header")
	}
	if resp.StatusCode >= 400 {
		ref := v.spec.Components.Schemas["Error"]
		var doc any
		if err := json.Unmarshal(body, &doc); err != nil {
			return err
		}
		if err := ref.Value.VisitJSON(doc, openapi3.MultiErrors()); err != nil {
			return err
		}
	}
	return validateOperation(v.route, req, reqBody, resp, body)
}
