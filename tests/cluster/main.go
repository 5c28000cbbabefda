// Command cluster runs a local, real Kubernetes for the inplace.k8s collection's tests:
// embedded etcd, kube-apiserver, kube-controller-manager, kube-scheduler and nodes
// running the real kubelet on a fake CRI runtime, each as its own OS process.
//
// It is a multi-call binary: "cluster up|down|status|restart" orchestrate; the other
// sub-commands are the components that "up" starts.
package main

import (
	"fmt"
	"os"

	"github.com/inplace-k8s/localcluster/app"
	"k8s.io/component-base/cli"
	apiserverapp "k8s.io/kubernetes/cmd/kube-apiserver/app"
	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	schedulerapp "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

const usage = `usage: cluster <command> [flags]

orchestration:
  up        start etcd, apiserver, controller-manager, scheduler and N nodes (no-op when up)
  down      stop every component and remove nothing but the processes
  status    show components, nodes, CRI sockets and log files
  restart   restart one component (apiserver, controller-manager, scheduler, node-N)

tools:
  cri       crictl-like client for a node's CRI socket: ps, stop ID, inspect ID
  traffic   a bounded request rate to a Service's ready endpoints, following its
            EndpointSlices with a propagation delay; reports sent/failed by second, pod, image
  app       the simulated application the runtime runs for each container (also built
            as the small binary cluster-app, which the runtime prefers)

components (started by "up"):
  etcd, apiserver, controller-manager, scheduler, node
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	cmd, args := os.Args[1], os.Args[2:]
	switch cmd {
	case "up", "down", "status", "restart", "wait":
		os.Exit(orchestrate(cmd, args))
	case "etcd":
		os.Exit(runEtcd(args))
	case "apiserver":
		c := apiserverapp.NewAPIServerCommand()
		c.SetArgs(args)
		os.Exit(cli.Run(c))
	case "controller-manager":
		c := kcmapp.NewControllerManagerCommand()
		c.SetArgs(args)
		os.Exit(cli.Run(c))
	case "scheduler":
		c := schedulerapp.NewSchedulerCommand()
		c.SetArgs(args)
		os.Exit(cli.Run(c))
	case "node":
		os.Exit(runNode(args))
	case "cri":
		os.Exit(runCRI(args))
	case "traffic":
		os.Exit(runTraffic(args))
	case "app":
		os.Exit(app.Main(args))
	case "-h", "--help", "help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "cluster: unknown command %q\n%s", cmd, usage)
		os.Exit(2)
	}
}
