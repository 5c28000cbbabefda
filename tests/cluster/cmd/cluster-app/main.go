// Command cluster-app is the simulated application of the local cluster ("cluster app"),
// built as its own small binary so that each container process stays small: the
// cluster binary links all of Kubernetes and its package initialisation alone costs
// tens of MiB per process.
package main

import (
	"os"

	"github.com/inplace-k8s/localcluster/app"
)

func main() { os.Exit(app.Main(os.Args[1:])) }
