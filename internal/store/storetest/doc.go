// Package storetest holds what keeps the two databases honest: the schema-parity
// comparison of the PostgreSQL and SQLite migration trees (schema.go) and the store's
// conformance suite, which runs every exported store method on both databases. Its
// tests run both; other packages may call Introspect and Diff.
package storetest
