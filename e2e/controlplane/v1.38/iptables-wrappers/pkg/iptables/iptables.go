// Package iptables is a stand-in (see ../../go.mod) with the names the v1.38 kubelet uses, and no iptables: its
// NewBestEffort finds no usable iptables, so the kubelet logs "No iptables support on this system" and creates
// neither its KUBE-IPTABLES-HINT chain nor its KUBE-FIREWALL rules, exactly as on a host without iptables.
// The tests' kubelets run hostNetwork pods only, with no kube-proxy, so nothing depends on those rules.
package iptables

import (
	"context"
	"time"
)

// Chain is an iptables chain name.
type Chain string

// Table is an iptables table name.
type Table string

// RulePosition says where EnsureRule puts a rule.
type RulePosition string

// Protocol is the IP family of a client.
type Protocol string

// Mode selects which iptables binaries a client would use.
type Mode string

const (
	TableMangle Table = "mangle"
	TableNAT    Table = "nat"
	TableFilter Table = "filter"

	ChainInput  Chain = "INPUT"
	ChainOutput Chain = "OUTPUT"

	Prepend RulePosition = "-I"
	Append  RulePosition = "-A"

	UseInstalledMode Mode = "installed"
)

// Interface is what the kubelet calls on a client; no value of it is ever made here.
type Interface interface {
	EnsureChain(ctx context.Context, table Table, chain Chain) (bool, error)
	EnsureRule(ctx context.Context, position RulePosition, table Table, chain Chain, args ...string) (bool, error)
	IsIPv6() bool
	Protocol() Protocol
	Monitor(ctx context.Context, canary Chain, tables []Table, reloadFunc func(), interval time.Duration)
}

// NewBestEffort returns no client: this stand-in has no iptables.
func NewBestEffort(context.Context, Mode) map[Protocol]Interface { return nil }
