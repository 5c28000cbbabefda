package main

// Pieces the kubelet needs from the host, kept in memory: pod cgroup configuration (so
// in-place resize completes) and container probing (Ready/Started follow the runtime).

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	"k8s.io/kubernetes/pkg/kubelet/cm"
)

// containerManager is kubemark's stub container manager with an in-memory pod
// container manager instead of one that answers "not implemented".
type containerManager struct {
	cm.ContainerManager
	pods             *memoryPodCgroups
	cpuManagerPolicy string
}

// newContainerManager: cpuManagerPolicy "static" makes the node report the static CPU
// manager policy, under which the kubelet refuses CPU resizes of Guaranteed pods as
// Infeasible, as a real node configured that way does.
func newContainerManager(cpuManagerPolicy string) cm.ContainerManager {
	return &containerManager{
		ContainerManager: cm.NewStubContainerManager(),
		pods:             &memoryPodCgroups{configs: map[types.UID]*cm.ResourceConfig{}},
		cpuManagerPolicy: cpuManagerPolicy,
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
		cfg = cm.ResourceConfigForPod(pod, true, cfsPeriodMicros, false, kubeletconfig.NoneMemoryReservationPolicy)
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

func (p *podContainerManager) SetPodCgroupConfig(_ klog.Logger, pod *v1.Pod, rc *cm.ResourceConfig) error {
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

// probeManager stands in for the kubelet's prober: probes would need a network path to
// pod IPs, which simulated pods do not have. A container is started and ready while it
// runs; readiness gates are still folded into the pod's Ready condition by the kubelet.
type probeManager struct{}

func newProbeManager() *probeManager { return &probeManager{} }

func (probeManager) AddPod(_ context.Context, _ *v1.Pod)    {}
func (probeManager) RemovePod(_ *v1.Pod)                    {}
func (probeManager) StopLivenessAndStartup(_ *v1.Pod)       {}
func (probeManager) CleanupPods(_ map[types.UID]sets.Empty) {}
func (probeManager) Start()                                 {}
func (probeManager) UpdatePodStatus(_ context.Context, _ *v1.Pod, s *v1.PodStatus) {
	set := func(list []v1.ContainerStatus) {
		for i := range list {
			running := list[i].State.Running != nil
			started := running
			list[i].Started = &started
			list[i].Ready = running
		}
	}
	set(s.ContainerStatuses)
	// Only restartable (sidecar) init containers stay running; the others are done.
	for i := range s.InitContainerStatuses {
		st := &s.InitContainerStatuses[i]
		if st.State.Running != nil {
			t := true
			st.Started, st.Ready = &t, true
		} else if st.State.Terminated != nil && st.State.Terminated.ExitCode == 0 {
			f := false
			st.Started, st.Ready = &f, true
		} else {
			f := false
			st.Started, st.Ready = &f, false
		}
	}
}
