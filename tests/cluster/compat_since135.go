//go:build !(k8s1.33 || k8s1.34)

package main

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/cm"
)

// SetPodCgroupConfig: since 1.35 the kubelet passes its logger.
func (p *podContainerManager) SetPodCgroupConfig(_ klog.Logger, pod *v1.Pod, rc *cm.ResourceConfig) error {
	return p.set(pod, rc)
}
