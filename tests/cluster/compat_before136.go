//go:build k8s1.33 || k8s1.34 || k8s1.35

package main

// The Kubernetes APIs the test bed calls, before 1.36 (see compat_since136.go).

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace/noop"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/remotecommand"
	internalapi "k8s.io/cri-api/pkg/apis"
	remote "k8s.io/cri-client/pkg"
	"k8s.io/klog/v2"
	"k8s.io/kubelet/pkg/cri/streaming"
	"k8s.io/kubernetes/pkg/kubelet/cm"
)

// Before 1.36 the streaming server's resize channel carries client-go's TerminalSize.
type (
	streamServer = streaming.Server
	terminalSize = remotecommand.TerminalSize
)

var (
	defaultStreamConfig = streaming.DefaultConfig
	newStreamServer     = streaming.NewServer
)

func criClients(_ context.Context, endpoint string) (internalapi.RuntimeService, internalapi.ImageManagerService, error) {
	logger := klog.Background()
	rs, err := remote.NewRemoteRuntimeService(endpoint, 15*time.Second, noop.NewTracerProvider(), &logger)
	if err != nil {
		return nil, nil, err
	}
	is, err := remote.NewRemoteImageService(endpoint, 15*time.Second, noop.NewTracerProvider(), &logger)
	return rs, is, err
}

func podResourceConfig(pod *v1.Pod) *cm.ResourceConfig {
	return cm.ResourceConfigForPod(pod, true, cfsPeriodMicros, false)
}
