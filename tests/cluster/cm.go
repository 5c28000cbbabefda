package main

// Pieces the kubelet needs from the host, kept in memory: pod cgroup configuration (so
// in-place resize completes).

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/kubelet/cm"
)

// containerManager is kubemark's stub container manager with an in-memory pod
// container manager instead of one that answers "not implemented".
type containerManager struct {
	cm.ContainerManager
	pods             *memoryPodCgroups
	cpuManagerPolicy string
	allocatable      v1.ResourceList // the node's capacity, nothing reserved (compat_134_135.go)
}

// newContainerManager: cpuManagerPolicy "static" makes the node report the static CPU
// manager policy, under which the kubelet refuses CPU resizes of Guaranteed pods as
// Infeasible, as a real node configured that way does. cores and memory: what the node
// reports (its machine info).
func newContainerManager(cpuManagerPolicy string, cores int, memory uint64) cm.ContainerManager {
	return &containerManager{
		ContainerManager: cm.NewStubContainerManager(),
		pods:             &memoryPodCgroups{configs: map[types.UID]*cm.ResourceConfig{}},
		cpuManagerPolicy: cpuManagerPolicy,
		allocatable: v1.ResourceList{
			v1.ResourceCPU:    *resource.NewQuantity(int64(cores), resource.DecimalSI),
			v1.ResourceMemory: *resource.NewQuantity(int64(memory), resource.BinarySI),
		},
	}
}

func (c *containerManager) GetNodeConfig() cm.NodeConfig {
	nc := c.ContainerManager.GetNodeConfig()
	nc.CPUManagerPolicy = c.cpuManagerPolicy
	return nc
}

func (c *containerManager) NewPodContainerManager() cm.PodContainerManager {
	return &podContainerManager{PodContainerManager: c.ContainerManager.NewPodContainerManager(), pods: c.pods}
}

type memoryPodCgroups struct {
	mu      sync.Mutex
	configs map[types.UID]*cm.ResourceConfig
}

type podContainerManager struct {
	cm.PodContainerManager
	pods *memoryPodCgroups
}

const cfsPeriodMicros = 100000

// GetPodCgroupConfig returns the configuration last set for the pod; for a pod never
// resized it is what the kubelet would have written when the pod started.
func (p *podContainerManager) GetPodCgroupConfig(pod *v1.Pod, name v1.ResourceName) (*cm.ResourceConfig, error) {
	p.pods.mu.Lock()
	defer p.pods.mu.Unlock()
	cfg, ok := p.pods.configs[pod.UID]
	if !ok {
		cfg = podResourceConfig(pod)
		p.pods.configs[pod.UID] = cfg
	}
	// The kubelet dereferences these without nil checks, as a real cgroup always has a value.
	zero64, zeroU := int64(0), uint64(0)
	out := &cm.ResourceConfig{Memory: &zero64, CPUShares: &zeroU, CPUQuota: &zero64, CPUPeriod: &zeroU}
	switch name {
	case v1.ResourceCPU:
		copyPtr(&out.CPUShares, cfg.CPUShares)
		copyPtr(&out.CPUQuota, cfg.CPUQuota)
		copyPtr(&out.CPUPeriod, cfg.CPUPeriod)
	case v1.ResourceMemory:
		copyPtr(&out.Memory, cfg.Memory)
	}
	return out, nil
}

func copyPtr[T any](dst **T, src *T) {
	if src != nil {
		v := *src
		*dst = &v
	}
}

// set records a pod's cgroup settings (SetPodCgroupConfig, whose signature changed in 1.35, is in
// compat_*135.go).
func (p *podContainerManager) set(pod *v1.Pod, rc *cm.ResourceConfig) error {
	p.pods.mu.Lock()
	defer p.pods.mu.Unlock()
	cfg, ok := p.pods.configs[pod.UID]
	if !ok {
		cfg = &cm.ResourceConfig{}
		p.pods.configs[pod.UID] = cfg
	}
	if rc.Memory != nil {
		cfg.Memory = rc.Memory
	}
	if rc.CPUShares != nil {
		cfg.CPUShares = rc.CPUShares
	}
	if rc.CPUQuota != nil {
		cfg.CPUQuota = rc.CPUQuota
	}
	if rc.CPUPeriod != nil {
		cfg.CPUPeriod = rc.CPUPeriod
	}
	return nil
}

// GetPodCgroupMemoryUsage reports a small, fixed usage: simulated processes use 8Mi.
func (p *podContainerManager) GetPodCgroupMemoryUsage(_ *v1.Pod) (uint64, error) {
	return 8 << 20, nil
}
