//go:build k8s1.34 || k8s1.35

package main

import v1 "k8s.io/api/core/v1"

// GetNodeAllocatableAbsolute: on 1.34 and 1.35 the kubelet's allocation manager judges a resize
// against the container manager's allocatable, and kubemark's stub answers an empty list: every
// resize was Infeasible ("Node didn't have enough capacity: memory, requested: ..., capacity: 0",
// found by make test-versions on 1.34). 1.33 reads the node's status instead, 1.36 and later the
// resize admit handler. A real node's: its capacity less what is reserved (nothing, here).
func (c *containerManager) GetNodeAllocatableAbsolute() v1.ResourceList { return c.allocatable }
