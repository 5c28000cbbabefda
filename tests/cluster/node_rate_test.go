package main

import "testing"

func TestKubeletAPIRate(t *testing.T) {
	for _, c := range []struct {
		slots, qps, burst int
	}{{110, 50, 100}, {60, 50, 100}, {138, 63, 126}, {430, 196, 392}} {
		qps, burst := kubeletAPIRate(c.slots)
		if int(qps) != c.qps || burst != c.burst {
			t.Errorf("kubeletAPIRate(%d) = %v, %d; want %d, %d", c.slots, qps, burst, c.qps, c.burst)
		}
	}
}
