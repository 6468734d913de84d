// Package openapi embeds the contract, openapi/partner.yaml, so the server can serve
// it as written (GET /openapi.yaml and the /docs page).
package openapi

import _ "embed"

// PartnerYAML is openapi/partner.yaml, byte for byte.
//
//go:embed partner.yaml
var PartnerYAML []byte

// OperatorYAML is openapi/operator.yaml, byte for byte.
//
//go:embed operator.yaml
var OperatorYAML []byte
