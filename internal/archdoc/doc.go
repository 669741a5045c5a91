// Package archdoc keeps docs/architecture.md true: its test reads the
// packages and their imports from the go command (go list) and their
// declarations from the source, checks the layering rules, and compares
// the generated part of the document with what the code says now. After a
// package is added, moved or split, `go test ./internal/archdoc -update`
// rewrites that part; a stale document fails the test.
//
// The package has no code of its own: it is imported by nothing.
package archdoc
