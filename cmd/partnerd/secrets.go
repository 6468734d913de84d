package main

import (
	"context"
	"fmt"
	"io"

	"partnerd/internal/audit"
)

// rotateSecrets seals every stored secret again under the current key (the
// first of SECRETS_KEYS) and prints how many rows it rewrote; once it has run,
// the older keys can leave SECRETS_KEYS. Running it again rewrites nothing.
func rotateSecrets(stdout io.Writer) error {
	ctx := context.Background()
	st, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	n, err := st.RotateSecrets(ctx)
	if err != nil {
		return fmt.Errorf("secrets rotate: %d rows sealed again before: %w", n, err)
	}
	if err := recordCLI(ctx, st, audit.SecretsRotated, fmt.Sprintf("%d rows sealed again", n)); err != nil {
		return fmt.Errorf("secrets rotate: sealed again, but the audit row was not written: %w", err)
	}
	fmt.Fprintf(stdout, "secrets sealed again under the current key: %d rows\n", n)
	return nil
}
