//go:build k8s1.33

package main

import (
	"context"

	"k8s.io/kubernetes/cmd/kubelet/app"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	"k8s.io/kubernetes/pkg/kubelet/server"
)

// kubeletTLS: 1.33's takes no context (see compat_since134.go).
func kubeletTLS(_ context.Context, f *options.KubeletFlags, c *kubeletconfig.KubeletConfiguration) (*server.TLSOptions, error) {
	return app.InitializeTLS(f, c)
}
