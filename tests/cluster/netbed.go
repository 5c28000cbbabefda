package main

// The test bed's network: every address a pod or a node uses lives on interfaces and in
// network namespaces this file creates and removes, inside 198.18.0.0/15 (the
// benchmarking range, RFC 2544). Nothing outside loopback and these is ever contacted.
//
// One cluster takes one /19 block of that range (16 blocks: up to 16 clusters on a
// machine). In the host network namespace it creates a bridge "ikBBbr" (BB: the block
// number) whose alias is the cluster directory, holding the block's first address and
// one address per node (the node's InternalIP: the kubelet listens there, the API
// server reaches it there). Node N hands out pod IPs from offset N*512 of the block;
// each pod sandbox gets a network namespace "ikBBnN-<ip>" holding eth0 with the pod IP,
// one end of a veth pair whose host end "ikBBpXXXX" is a port of the bridge. No default
// route exists in a pod's namespace: pods reach the bridge's subnet and nothing else.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
)

const (
	netRange     = "198.18.0.0" // /15
	netBlocks    = 16
	blockBits    = 19
	blockSize    = 1 << (32 - blockBits)
	nodePodSlots = 512
	maxNodes     = blockSize/nodePodSlots - 1
)

// clusterNet is what state.json remembers of a cluster's network.
type clusterNet struct {
	Block  int    `json:"block"`
	Prefix string `json:"prefix"` // name prefix of every netns and interface: "ikBB"
	Bridge string `json:"bridge"`
	CIDR   string `json:"cidr"`
}

func ipAdd(base string, off int) string {
	b := binary.BigEndian.Uint32(net.ParseIP(base).To4())
	out := make(net.IP, 4)
	binary.BigEndian.PutUint32(out, b+uint32(off))
	return out.String()
}

func blockBase(block int) string { return ipAdd(netRange, block*blockSize) }

func (n *clusterNet) base() string { return blockBase(n.Block) }

// nodeIP is node N's InternalIP (offset 1 is the bridge's own address).
func (n *clusterNet) nodeIP(node int) string { return ipAdd(n.base(), 1+node) }

// podBase is the first address of node N's pod range.
func (n *clusterNet) podBase(node int) string { return ipAdd(n.base(), node*nodePodSlots) }

// ipCmd runs ip(8), feeding it a batch of commands on stdin when batch is set.
func ipCmd(batch []string, args ...string) error {
	if batch != nil {
		args = append(args, "-batch", "-")
	}
	cmd := exec.Command("ip", args...)
	if batch != nil {
		cmd.Stdin = strings.NewReader(strings.Join(batch, "\n") + "\n")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s (%s)", strings.Join(args, " "), err, bytes.TrimSpace(out), strings.Join(batch, "; "))
	}
	return nil
}

func ipOut(args ...string) string {
	out, _ := exec.Command("ip", args...).Output()
	return string(out)
}

// createNet takes the first free block: creating its bridge is the lock (a name exists
// once), and a block whose addresses are in use on this machine is skipped.
func createNet(dir string, nodes int) (*clusterNet, error) {
	if nodes > maxNodes {
		return nil, fmt.Errorf("at most %d nodes fit the test bed's address plan, not %d: lower NODES", maxNodes, nodes)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, fmt.Errorf("the local cluster needs ip(8) (Debian package iproute2) to make pod networks: %v", err)
	}
	if _, err := exec.LookPath("nsenter"); err != nil {
		return nil, fmt.Errorf("the local cluster needs nsenter(1) (Debian package util-linux) to exec in containers: %v", err)
	}
	var lastErr error
	for b := 0; b < netBlocks; b++ {
		n := &clusterNet{Block: b, Prefix: fmt.Sprintf("ik%02d", b)}
		n.Bridge, n.CIDR = n.Prefix+"br", fmt.Sprintf("%s/%d", n.base(), blockBits)
		if strings.TrimSpace(ipOut("-o", "addr", "show", "to", n.CIDR)) != "" {
			continue
		}
		if err := ipCmd(nil, "link", "add", n.Bridge, "type", "bridge"); err != nil {
			lastErr = err
			continue
		}
		batch := []string{"link set " + n.Bridge + " alias " + dir, "link set " + n.Bridge + " up",
			fmt.Sprintf("addr add %s/%d dev %s", ipAdd(n.base(), 1), blockBits, n.Bridge)}
		for i := 1; i <= nodes; i++ {
			batch = append(batch, fmt.Sprintf("addr add %s/%d dev %s", n.nodeIP(i), blockBits, n.Bridge))
		}
		if err := ipCmd(batch); err != nil {
			_ = ipCmd(nil, "link", "del", n.Bridge)
			return nil, fmt.Errorf("set up the bridge %s: %w", n.Bridge, err)
		}
		return n, nil
	}
	return nil, fmt.Errorf("no free /%d block in %s/15 for pod networks (other local clusters use them all?): %v", blockBits, netRange, lastErr)
}

// ownedBridges finds the bridges whose alias is this cluster directory.
func ownedBridges(dir string) []string {
	var out []string
	for _, line := range strings.Split(ipOut("-o", "link", "show", "type", "bridge"), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasPrefix(f[1], "ik") {
			continue
		}
		for i := 0; i+1 < len(f); i++ {
			if f[i] == "alias" && strings.Join(f[i+1:], " ") == dir {
				out = append(out, strings.TrimSuffix(f[1], ":"))
			}
		}
	}
	return out
}

// heldByOther: the bridge exists and its alias names another cluster directory.
func heldByOther(bridge, dir string) bool {
	for _, line := range strings.Split(ipOut("-o", "link", "show", "dev", bridge), "\n") {
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if f[i] == "alias" {
				return strings.Join(f[i+1:], " ") != dir
			}
		}
	}
	return false
}

// namespacesWithPrefix lists the network namespaces whose name starts with prefix.
func namespacesWithPrefix(prefix string) []string {
	var out []string
	for _, line := range strings.Split(ipOut("netns", "list"), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && strings.HasPrefix(f[0], prefix) {
			out = append(out, f[0])
		}
	}
	return out
}

// removeNet deletes every namespace and interface of the cluster in dir: the bridges
// it owns (found by alias) and the block recorded in state, if any.
func removeNet(dir string, n *clusterNet) error {
	prefixes := map[string]bool{}
	// The block the state names is this cluster's only while no other cluster's bridge holds it: a block freed
	// earlier may have been taken since by another cluster directory, whose namespaces are not ours to delete.
	if n != nil && !heldByOther(n.Prefix+"br", dir) {
		prefixes[n.Prefix] = true
	}
	for _, br := range ownedBridges(dir) {
		prefixes[strings.TrimSuffix(br, "br")] = true
	}
	var errs []string
	for p := range prefixes {
		for _, ns := range namespacesWithPrefix(p + "n") {
			if err := ipCmd(nil, "netns", "del", ns); err != nil {
				errs = append(errs, err.Error())
			}
		}
		if _, err := net.InterfaceByName(p + "br"); err == nil {
			if err := ipCmd(nil, "link", "del", p+"br"); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("removing the test bed's network: %s", strings.Join(errs, "; "))
	}
	return nil
}

// leftoverNet names what is left of the cluster's network (for "down" to check).
func leftoverNet(dir string, n *clusterNet) []string {
	var left []string
	left = append(left, ownedBridges(dir)...)
	if n != nil && !heldByOther(n.Prefix+"br", dir) {
		left = append(left, namespacesWithPrefix(n.Prefix+"n")...)
		for _, line := range strings.Split(ipOut("-o", "link"), "\n") {
			f := strings.Fields(line)
			if len(f) > 1 && strings.HasPrefix(f[1], n.Prefix) {
				left = append(left, strings.TrimSuffix(strings.SplitN(f[1], "@", 2)[0], ":"))
			}
		}
	}
	return left
}

// ---- per node: pod sandboxes ----

// podNet is a node's share of the cluster network.
type podNet struct {
	prefix string // "ikBBnN-"
	vethP  string // "ikBBp"
	bridge string
	bits   int
	base   string // first address of the node's pod range
	nodeIP string
}

func (p *podNet) nsName(ip string) string { return p.prefix + ip }
func (p *podNet) nsPath(ip string) string { return "/run/netns/" + p.nsName(ip) }

// vethName names the host end of a pod's veth pair by the pod IP's offset in the block.
func (p *podNet) vethName(ip string) string {
	off := binary.BigEndian.Uint32(net.ParseIP(ip).To4()) & (blockSize - 1)
	return fmt.Sprintf("%s%04x", p.vethP, off)
}

// podIP is the address at offset slot (1..nodePodSlots-2) of the node's range.
func (p *podNet) podIP(slot int) string { return ipAdd(p.base, slot) }

// nodeNet is node index's share of the network of the cluster in clusterDir. The node's
// address is put on the bridge if it is not there yet (a node added after "up").
func nodeNet(clusterDir string, index int) (*podNet, error) {
	st, err := loadState(clusterDir)
	if err != nil || st.Net == nil {
		return nil, fmt.Errorf("no network in %s: start the cluster with 'cluster up' (%v)", statePath(clusterDir), err)
	}
	if index < 1 || index > maxNodes {
		return nil, fmt.Errorf("--index %d: must be 1..%d (the address plan has %d node ranges)", index, maxNodes, maxNodes)
	}
	n := st.Net
	pn := &podNet{prefix: fmt.Sprintf("%sn%d-", n.Prefix, index), vethP: n.Prefix + "p", bridge: n.Bridge, bits: blockBits,
		base: n.podBase(index), nodeIP: n.nodeIP(index)}
	if strings.TrimSpace(ipOut("-o", "addr", "show", "dev", n.Bridge, "to", pn.nodeIP+"/32")) == "" {
		if err := ipCmd(nil, "addr", "add", fmt.Sprintf("%s/%d", pn.nodeIP, blockBits), "dev", n.Bridge); err != nil {
			return nil, err
		}
	}
	return pn, nil
}

// setup makes the pod's namespace and its veth pair, and puts ip on eth0.
func (p *podNet) setup(ip string) error {
	ns, veth := p.nsName(ip), p.vethName(ip)
	_ = p.teardown(ip) // a leftover of an earlier life of this node
	if err := ipCmd([]string{"netns add " + ns, "link add " + veth + " type veth peer name eth0 netns " + ns,
		"link set " + veth + " master " + p.bridge + " up"}); err != nil {
		_ = p.teardown(ip)
		return err
	}
	if err := ipCmd([]string{fmt.Sprintf("addr add %s/%d dev eth0", ip, p.bits), "link set eth0 up", "link set lo up"},
		"-n", ns); err != nil {
		_ = p.teardown(ip)
		return err
	}
	return nil
}

// teardown deletes the pod's namespace (and with it both ends of its veth pair).
func (p *podNet) teardown(ip string) error {
	if _, err := os.Stat(p.nsPath(ip)); err != nil {
		return nil
	}
	return ipCmd(nil, "netns", "del", p.nsName(ip))
}

// sweep deletes every namespace of this node: what an earlier run of the node left.
func (p *podNet) sweep() {
	for _, ns := range namespacesWithPrefix(p.prefix) {
		_ = ipCmd(nil, "netns", "del", ns)
	}
}
