//go:build k8s1.33 || k8s1.34

package main

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/kubelet/cm"
)

// SetPodCgroupConfig: before 1.35, without a logger (see compat_since135.go).
func (p *podContainerManager) SetPodCgroupConfig(pod *v1.Pod, rc *cm.ResourceConfig) error {
	return p.set(pod, rc)
}
