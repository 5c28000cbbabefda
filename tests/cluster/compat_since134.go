//go:build !k8s1.33

package main

import (
	"context"

	"k8s.io/kubernetes/cmd/kubelet/app"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	"k8s.io/kubernetes/pkg/kubelet/server"
)

// kubeletTLS: since 1.34 the kubelet's TLS set-up takes a context.
func kubeletTLS(ctx context.Context, f *options.KubeletFlags, c *kubeletconfig.KubeletConfiguration) (*server.TLSOptions, error) {
	return app.InitializeTLS(ctx, f, c)
}
