package httpkit

import (
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"
)

// An operation added to a contract gets the request checks and, when it changes
// state, must declare an Idempotency-Key: the layer refuses a contract without one.
func TestContractRulesFollowTheSpec(t *testing.T) {
	t.Parallel()
	doc := func(params openapi3.Parameters) *openapi3.T {
		spec := &openapi3.T{OpenAPI: "3.0.3", Paths: openapi3.NewPaths(), Components: &openapi3.Components{
			SecuritySchemes: openapi3.SecuritySchemes{"Key": {Value: &openapi3.SecurityScheme{Type: "apiKey", In: "header", Name: "X-API-KEY"}}},
		}}
		spec.Paths.Set("/base/things/{id}/poke", &openapi3.PathItem{Post: &openapi3.Operation{OperationID: "PokeThing", Parameters: params}})
		spec.Paths.Set("/base/things", &openapi3.PathItem{Get: &openapi3.Operation{OperationID: "listThings", Parameters: openapi3.Parameters{
			{Value: &openapi3.Parameter{Name: "limit", In: "query"}},
		}}})
		return spec
	}
	_, err := OperationMiddlewares(doc(nil), nil, nil)
	require.ErrorContains(t, err, "pokeThing changes state but declares no Idempotency-Key")

	key := &openapi3.ParameterRef{Value: &openapi3.Parameter{Name: "Idempotency-Key", In: "header"}}
	mw, err := OperationMiddlewares(doc(openapi3.Parameters{key}), nil, nil)
	require.NoError(t, err)
	require.Len(t, mw["listThings"], 2, "request checks and validation")
	require.Len(t, mw["pokeThing"], 3, "request checks, validation and the idempotency layer")

	ct := IndexContract(doc(openapi3.Parameters{key}))
	poke := ct["POST /base/things/:id/poke"]
	require.NotNil(t, poke)
	require.Equal(t, []string{"Idempotency-Key", "X-Api-Key"}, poke.headers)
	require.True(t, ct["GET /base/things"].query["limit"])
}
