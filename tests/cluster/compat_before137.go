//go:build k8s1.33 || k8s1.34 || k8s1.35 || k8s1.36

package main

import cadvisorapi "github.com/google/cadvisor/info/v1"

type (
	cadvisorMachineInfo = cadvisorapi.MachineInfo
	cadvisorInstanceID  = cadvisorapi.InstanceID
)

// MachineInfo: before 1.37, cadvisor's types come from github.com/google/cadvisor/info/v1.
func (m *machine) MachineInfo() (*cadvisorMachineInfo, error) { return m.info(), nil }
