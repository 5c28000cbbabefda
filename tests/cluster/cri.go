package main

// "cluster cri": a small crictl-like client for a node's CRI socket, so tests (and the
// container_recreate module's cri strategy) can act on containers the way an operator
// on the node would.
//
//	cluster cri --socket PATH ps [--pod NAME] [--namespace NS] [--name CONTAINER]
//	cluster cri --socket PATH stop [--timeout S] CONTAINER_ID
//	cluster cri --socket PATH inspect CONTAINER_ID

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func runCRI(args []string) int {
	fs := flag.NewFlagSet("cri", flag.ExitOnError)
	socket := fs.String("socket", "", "CRI unix socket of the node")
	pod := fs.String("pod", "", "ps: only containers of this pod")
	ns := fs.String("namespace", "", "ps: only containers of pods in this namespace")
	name := fs.String("name", "", "ps: only containers with this name")
	timeout := fs.Int64("timeout", 10, "stop: grace period in seconds")
	_ = fs.Parse(args)
	rest := fs.Args()
	if len(rest) > 1 {
		// Flags may also follow the verb: "ps --pod NAME", "stop --timeout 5 ID".
		_ = fs.Parse(rest[1:])
		rest = append([]string{rest[0]}, fs.Args()...)
	}
	if *socket == "" || len(rest) == 0 {
		fmt.Fprintln(os.Stderr, "usage: cluster cri --socket PATH ps|stop ID|inspect ID")
		return 2
	}
	conn, err := grpc.NewClient("unix://"+*socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Fprintf(os.Stderr, "cri: connect %s: %v\n", *socket, err)
		return 1
	}
	defer conn.Close()
	rs := runtimeapi.NewRuntimeServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := json.NewEncoder(os.Stdout)
	out.SetIndent("", "  ")
	switch rest[0] {
	case "ps":
		resp, err := rs.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
		if err != nil {
			fmt.Fprintf(os.Stderr, "cri: list containers: %v\n", err)
			return 1
		}
		type row struct {
			ID, Name, Pod, Namespace, PodUID, State, Image string
			Attempt                                        uint32
		}
		rows := []row{}
		for _, c := range resp.Containers {
			l := c.Labels
			if (*pod != "" && l["io.kubernetes.pod.name"] != *pod) || (*ns != "" && l["io.kubernetes.pod.namespace"] != *ns) ||
				(*name != "" && c.Metadata.GetName() != *name) {
				continue
			}
			rows = append(rows, row{c.Id, c.Metadata.GetName(), l["io.kubernetes.pod.name"], l["io.kubernetes.pod.namespace"],
				l["io.kubernetes.pod.uid"], c.State.String(), c.Image.GetImage(), c.Metadata.GetAttempt()})
		}
		_ = out.Encode(rows)
	case "stop", "inspect":
		if len(rest) != 2 {
			fmt.Fprintf(os.Stderr, "usage: cluster cri --socket PATH %s CONTAINER_ID\n", rest[0])
			return 2
		}
		if rest[0] == "stop" {
			if _, err := rs.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: rest[1], Timeout: *timeout}); err != nil {
				fmt.Fprintf(os.Stderr, "cri: stop %s: %v\n", rest[1], err)
				return 1
			}
			fmt.Printf("stopped %s\n", rest[1])
			return 0
		}
		resp, err := rs.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: rest[1]})
		if err != nil {
			fmt.Fprintf(os.Stderr, "cri: inspect %s: %v\n", rest[1], err)
			return 1
		}
		_ = out.Encode(resp.Status)
	default:
		fmt.Fprintf(os.Stderr, "cri: unknown command %q (ps, stop, inspect)\n", rest[0])
		return 2
	}
	return 0
}
