//go:build tools

// Package tools pins runc v1.5.3 (runc) from the Go module proxy: go.mod names the version,
// go.sum the hash of every module it is built from. The build tag keeps this file out of every build;
// `go mod tidy` still reads its imports. The binaries are built by tests/realcluster/building.py.
package tools

import (
	_ "github.com/opencontainers/runc"
)
