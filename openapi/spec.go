// Package openapi embeds the contract, openapi/partner.yaml, so the server can serve
// it as written (GET /openapi.yaml and the /docs page).
package openapi

import (
	_ "embed"
	"errors"
	"strings"
)

// PartnerYAML is openapi/partner.yaml, byte for byte.
//
//go:embed partner.yaml
var PartnerYAML []byte

// OperatorYAML is openapi/operator.yaml, byte for byte.
//
//go:embed operator.yaml
var OperatorYAML []byte

// ChangelogMD is openapi/CHANGELOG.md: what each released contract changed, served
// at /docs/changelog.
//
//go:embed CHANGELOG.md
var ChangelogMD []byte

// LoadVersion returns a contract's info.version: the first line indented by two
// spaces under info, as every contract here is written.
func LoadVersion(specYAML []byte) (string, error) {
	inInfo := false
	for _, line := range strings.Split(string(specYAML), "\n") {
		switch {
		case line == "info:":
			inInfo = true
		case inInfo && !strings.HasPrefix(line, " "):
			inInfo = false
		case inInfo:
			if v, ok := strings.CutPrefix(line, "  version: "); ok {
				return strings.Trim(strings.TrimSpace(v), `"'`), nil
			}
		}
	}
	return "", errors.New("the contract has no info.version")
}
