//go:build k8s1.33

package main

import (
	"context"

	"github.com/gogo/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/kubernetes/cmd/kubelet/app"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	"k8s.io/kubernetes/pkg/kubelet/server"
)

// kubeletTLS: 1.33's takes no context (see compat_since134.go).
func kubeletTLS(_ context.Context, f *options.KubeletFlags, c *kubeletconfig.KubeletConfiguration) (*server.TLSOptions, error) {
	return app.InitializeTLS(f, c)
}

// The CRI messages of 1.33's k8s.io/cri-api are gogo-protobuf (google.golang.org/protobuf from 1.34 on,
// see compat_since134.go): cloned and merged with gogo's proto package, and Image's size is Size_.
var (
	protoClone = proto.Clone
	protoMerge = proto.Merge
)

// apiImage sets the image's size in bytes.
func apiImage(i *runtimeapi.Image, size uint64) *runtimeapi.Image {
	i.Size_ = size
	return i
}
