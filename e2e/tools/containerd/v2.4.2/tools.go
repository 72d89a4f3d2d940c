//go:build tools

// Package tools pins containerd v2.4.2 (containerd, containerd-shim-runc-v2, ctr) from the Go module proxy: go.mod names the version,
// go.sum the hash of every module it is built from. The build tag keeps this file out of every build;
// `go mod tidy` still reads its imports. The binaries are built by tests/realcluster/building.py.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
