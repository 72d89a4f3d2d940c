//go:build tools

// Package tools pins kustomize v5.0.1 (kustomize) from the Go module proxy: go.mod names the version,
// go.sum the hash of every module it is built from. The build tag keeps this file out of every build;
// `go mod tidy` still reads its imports. The binaries are built by tests/realcluster/building.py.
package tools

import (
	_ "sigs.k8s.io/kustomize/kustomize/v5"
)
