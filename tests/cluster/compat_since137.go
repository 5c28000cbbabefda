//go:build !(k8s1.33 || k8s1.34 || k8s1.35 || k8s1.36)

package main

import (
	cadvisorapi "github.com/google/cadvisor/lib/model"
	"k8s.io/klog/v2"
)

type (
	cadvisorMachineInfo = cadvisorapi.MachineInfo
	cadvisorInstanceID  = cadvisorapi.InstanceID
)

// MachineInfo: since 1.37 the kubelet uses cadvisor's github.com/google/cadvisor/lib module and
// passes its logger.
func (m *machine) MachineInfo(klog.Logger) (*cadvisorMachineInfo, error) { return m.info(), nil }
