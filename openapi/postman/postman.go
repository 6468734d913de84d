// Package postman embeds the Postman collections generated from the contracts
// (make postman) and the sandbox environment, so the service serves them at /docs
// exactly as committed.
package postman

import _ "embed"

// Partner is the partner API's collection (partner.postman_collection.json).
//
//go:embed partner.postman_collection.json
var Partner []byte

// Operator is the operator API's collection (operator.postman_collection.json).
//
//go:embed operator.postman_collection.json
var Operator []byte

// SandboxEnvironment sets both collections' base URLs to a local `make run`, with
// placeholders for the keys (sandbox.postman_environment.json).
//
//go:embed sandbox.postman_environment.json
var SandboxEnvironment []byte
