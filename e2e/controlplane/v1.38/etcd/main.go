// Command etcd is the etcd server of the release k8s.io/kubernetes requires (see go.mod), nothing added.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
