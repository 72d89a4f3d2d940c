// A stand-in for sigs.k8s.io/iptables-wrappers v1.0.0, which k8s.io/kubernetes v1.38.0-beta.0 requires for the
// kubelet (pkg/kubelet/kubelet_network_linux.go) and kube-proxy, but whose module zip the Go module proxy does not
// serve (403 "This module version is not available"; its .info and .mod are served). Written here, not copied.
module sigs.k8s.io/iptables-wrappers

go 1.26
