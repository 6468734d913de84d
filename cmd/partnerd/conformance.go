package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"partnerd/internal/contract/conformance"
)

// errNonConformant is returned (exit status 1) when the deployment failed the
// check; the report has said why.
var errNonConformant = errors.New("conformance: the deployment does not conform to its contracts (see the report)")

// checkConformance runs the conformance check against a deployment and prints
// its report, as text or (--json) one JSON document; it fails when any operation
// failed.
func checkConformance(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("conformance", stderr)
	base := fs.String("base-url", "", "the deployment's root, http(s)://HOST[:PORT] (required)")
	key := fs.String("api-key", "", "a sandbox partner API key (required; or PARTNERD_API_KEY)")
	opKey := fs.String("operator-key", "", "an operator key holding treasury (and admin, compliance to check everything): also check the operator API (or PARTNERD_OPERATOR_KEY)")
	webhooks := fs.Bool("include-webhooks", false, "also PUT the webhook endpoint (put back exactly as found)")
	rotate := fs.Bool("rotate-webhook-secret", false, "also rotate the webhook signing secret (cannot be undone; the new secret is printed on stderr)")
	prefix := fs.String("prefix", "conformance-", "start of the merchant reference of every transaction the check creates")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	timeout := fs.Duration("timeout", 30*time.Second, "timeout of each request")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	if *key == "" {
		*key = os.Getenv("PARTNERD_API_KEY")
	}
	if *opKey == "" {
		*opKey = os.Getenv("PARTNERD_OPERATOR_KEY")
	}
	if *base == "" || *key == "" {
		return errors.New("conformance: --base-url and --api-key are required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := conformance.Run(ctx, conformance.Config{
		BaseURL: *base, APIKey: *key, OperatorKey: *opKey,
		IncludeWebhooks: *webhooks, RotateWebhookSecret: *rotate,
		OnNewSecret: func(s string) {
			fmt.Fprintf(stderr, "The webhook signing secret was rotated. The new secret (shown only now; the previous one signs beside it for 24 hours):\n\n    %s\n\n", s)
		},
		Prefix: *prefix, Timeout: *timeout,
	})
	if err != nil {
		return fmt.Errorf("conformance: %w", err)
	}
	if *asJSON {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteText(stdout)
	}
	if err != nil {
		return err
	}
	if !rep.OK() {
		return errNonConformant
	}
	return nil
}
