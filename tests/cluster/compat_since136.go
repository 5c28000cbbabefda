//go:build !(k8s1.33 || k8s1.34 || k8s1.35)

package main

// The Kubernetes APIs the test bed calls, as of 1.36 (see "Versions" in README.md: each compat_*.go
// file holds one API as the releases named in its build constraint have it).

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace/noop"
	v1 "k8s.io/api/core/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
	remote "k8s.io/cri-client/pkg"
	"k8s.io/cri-streaming/pkg/streaming"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	"k8s.io/kubernetes/pkg/kubelet/cm"
)

// The CRI streaming server moved from k8s.io/kubelet/pkg/cri/streaming to k8s.io/cri-streaming in 1.36.
type (
	streamServer = streaming.Server
	terminalSize = remotecommand.TerminalSize
)

var (
	defaultStreamConfig = streaming.DefaultConfig
	newStreamServer     = streaming.NewServer
)

// criClients: since 1.36 the CRI clients take a context and whether to use the streaming list calls.
func criClients(ctx context.Context, endpoint string) (internalapi.RuntimeService, internalapi.ImageManagerService, error) {
	rs, err := remote.NewRemoteRuntimeService(ctx, endpoint, 15*time.Second, noop.NewTracerProvider(), false)
	if err != nil {
		return nil, nil, err
	}
	is, err := remote.NewRemoteImageService(ctx, endpoint, 15*time.Second, noop.NewTracerProvider(), false)
	return rs, is, err
}

// podResourceConfig: since 1.36 the kubelet's pod cgroup settings take a memory reservation policy.
func podResourceConfig(pod *v1.Pod) *cm.ResourceConfig {
	return cm.ResourceConfigForPod(pod, true, cfsPeriodMicros, false, kubeletconfig.NoneMemoryReservationPolicy)
}
