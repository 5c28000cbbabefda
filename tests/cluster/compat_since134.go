//go:build !k8s1.33

package main

import (
	"context"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/kubernetes/cmd/kubelet/app"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	"k8s.io/kubernetes/pkg/kubelet/server"
)

// kubeletTLS: since 1.34 the kubelet's TLS set-up takes a context.
func kubeletTLS(ctx context.Context, f *options.KubeletFlags, c *kubeletconfig.KubeletConfiguration) (*server.TLSOptions, error) {
	return app.InitializeTLS(ctx, f, c)
}

// The CRI messages are google.golang.org/protobuf since 1.34's k8s.io/cri-api (see compat_before134.go).
var (
	protoClone = proto.Clone
	protoMerge = proto.Merge
)

// apiImage sets the image's size in bytes.
func apiImage(i *runtimeapi.Image, size uint64) *runtimeapi.Image {
	i.Size = size
	return i
}
