//go:build tools

// Package controlplane pins the Kubernetes commands the real-cluster and real-node tests run. The build tag
// keeps this file out of every build; `go mod tidy` still reads its imports, so the requirements stay in go.mod.
// The binaries are built by tests/realcluster/building.py (one `go build` for all of them), never with
// `go build ./...`.
package controlplane

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
