package main

// up / down / status / restart: start each component as its own OS process (a new
// session, its own log file), remember how it was started in state.json, and find every
// process of this cluster again by an environment marker so that "down" leaves none.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const markerEnv = "INPLACE_LOCAL_CLUSTER_DIR"

type component struct {
	Name string   `json:"name"`
	Args []string `json:"args"`
	PID  int      `json:"pid"`
	Log  string   `json:"log"`
	// Node-only facts shown by status.
	CRISocket string `json:"criSocket,omitempty"`
}

type state struct {
	Dir        string       `json:"dir"`
	Server     string       `json:"server"`
	Kubeconfig string       `json:"kubeconfig"`
	Version    string       `json:"version"`
	Components []*component `json:"components"`
	// Net is the cluster's share of the test bed's network (netbed.go).
	Net *clusterNet `json:"net,omitempty"`
}

type clusterOptions struct {
	dir             string
	nodes           int
	cpu             int
	memory          string
	maxPods         int
	port            int
	etcdPort        int
	kubeletPortBase int
	timeout         time.Duration
	audit           bool
}

func parseOptions(cmd string, args []string) (*clusterOptions, []string) {
	o := &clusterOptions{}
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	fs.StringVar(&o.dir, "dir", envOr("CLUSTERDIR", ".cluster"), "state directory (kubeconfig, logs, pids)")
	fs.IntVar(&o.nodes, "nodes", envInt("NODES", 3), "number of simulated nodes")
	fs.IntVar(&o.cpu, "node-cpu", envInt("NODE_CPU", 4), "CPU cores per node")
	fs.StringVar(&o.memory, "node-memory", envOr("NODE_MEMORY", "8Gi"), "memory per node")
	fs.IntVar(&o.maxPods, "max-pods", envInt("NODE_MAX_PODS", 110), "max pods per node")
	fs.IntVar(&o.port, "port", envInt("APISERVER_PORT", 16443), "kube-apiserver port on 127.0.0.1")
	fs.IntVar(&o.etcdPort, "etcd-port", envInt("ETCD_PORT", 12379), "etcd client port (peer port is +1)")
	fs.IntVar(&o.kubeletPortBase, "kubelet-port-base", envInt("KUBELET_PORT_BASE", 11250), "node N's kubelet listens on base+N")
	fs.DurationVar(&o.timeout, "timeout", 180*time.Second, "how long to wait for readiness")
	fs.BoolVar(&o.audit, "audit", os.Getenv("CLUSTER_AUDIT") == "1", "write an apiserver audit log (Metadata level)")
	_ = fs.Parse(args)
	abs, _ := filepath.Abs(o.dir)
	o.dir = abs
	return o, fs.Args()
}

func envOr(k, d string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return d
}

func envInt(k string, d int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil {
		return v
	}
	return d
}

func orchestrate(cmd string, args []string) int {
	o, rest := parseOptions(cmd, args)
	var err error
	switch cmd {
	case "up":
		err = up(o)
	case "down":
		err = down(o)
	case "status":
		err = showStatus(o)
	case "restart":
		if len(rest) != 1 {
			err = errors.New("usage: cluster restart [--dir DIR] <apiserver|controller-manager|scheduler|etcd|node-N>")
		} else {
			err = restart(o, rest[0])
		}
	case "wait":
		err = waitReady(o)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "cluster %s: %v\n", cmd, err)
		return 1
	}
	return 0
}

func statePath(dir string) string { return filepath.Join(dir, "state.json") }

func loadState(dir string) (*state, error) {
	b, err := os.ReadFile(statePath(dir))
	if err != nil {
		return nil, err
	}
	s := &state{}
	return s, json.Unmarshal(b, s)
}

func (s *state) save() error {
	b, _ := json.MarshalIndent(s, "", "  ")
	return os.WriteFile(statePath(s.Dir), b, 0o644)
}

func (s *state) get(name string) *component {
	for _, c := range s.Components {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// A zombie ("Z") is not alive.
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] != "Z"
}

// start launches a component in its own session with its output in its log file.
func start(s *state, c *component) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	logf, err := os.OpenFile(c.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "==== %s start %s\n", time.Now().Format(time.RFC3339), c.Name)
	cmd := exec.Command(self, c.Args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), markerEnv+"="+s.Dir, "GOTRACEBACK=all")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", c.Name, err)
	}
	c.PID = cmd.Process.Pid
	_ = cmd.Process.Release()
	return s.save()
}

// stop sends SIGTERM, waits, then SIGKILL.
func stop(pid int, grace time.Duration) {
	if !alive(pid) {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for i := 0; i < 50 && alive(pid); i++ {
		time.Sleep(100 * time.Millisecond)
	}
}

// markedPIDs finds every process started for this cluster directory.
func markedPIDs(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	want := markerEnv + "=" + dir
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(b), "\x00") {
			if kv == want {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

func (o *clusterOptions) components(p pki) []*component {
	logs := filepath.Join(o.dir, "logs")
	kc := filepath.Join(o.dir, "admin.kubeconfig")
	apiArgs := []string{"apiserver",
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", o.etcdPort),
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", o.port), "--advertise-address=127.0.0.1",
		"--tls-cert-file=" + p.path("apiserver.crt"), "--tls-private-key-file=" + p.path("apiserver.key"),
		"--client-ca-file=" + p.path("ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p.path("sa.pub"),
		"--service-account-signing-key-file=" + p.path("sa.key"),
		"--service-cluster-ip-range=10.96.0.0/16",
		"--authorization-mode=Node,RBAC",
		"--allow-privileged=true",
		"--endpoint-reconciler-type=none",
		"--kubelet-client-certificate=" + p.path("admin.crt"), "--kubelet-client-key=" + p.path("admin.key"),
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		"--profiling=false",
		"--event-ttl=1h",
	}
	if o.audit {
		policy := filepath.Join(o.dir, "audit-policy.yaml")
		_ = os.WriteFile(policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n"), 0o644)
		apiArgs = append(apiArgs, "--audit-policy-file="+policy, "--audit-log-path="+filepath.Join(logs, "audit.log"),
			"--audit-log-format=json", "--audit-log-mode=batch", "--audit-log-maxsize=1024")
	}
	cs := []*component{
		{Name: "etcd", Args: []string{"etcd", "--data-dir=" + filepath.Join(o.dir, "etcd"),
			fmt.Sprintf("--client-port=%d", o.etcdPort), fmt.Sprintf("--peer-port=%d", o.etcdPort+1)}},
		{Name: "apiserver", Args: apiArgs},
		{Name: "controller-manager", Args: []string{"controller-manager",
			"--kubeconfig=" + kc, "--bind-address=127.0.0.1", "--secure-port=0", "--leader-elect=false",
			"--controllers=*", "--service-account-private-key-file=" + p.path("sa.key"),
			"--root-ca-file=" + p.path("ca.crt"), "--use-service-account-credentials=true",
			"--cluster-signing-cert-file=" + p.path("ca.crt"), "--cluster-signing-key-file=" + p.path("ca.key"),
			"--kube-api-qps=200", "--kube-api-burst=400", "--concurrent-statefulset-syncs=10",
		}},
		{Name: "scheduler", Args: []string{"scheduler", "--kubeconfig=" + kc, "--bind-address=127.0.0.1",
			"--secure-port=0", "--leader-elect=false"}},
	}
	for i := 1; i <= o.nodes; i++ {
		name := fmt.Sprintf("node-%d", i)
		nd := filepath.Join(o.dir, "nodes", name)
		cs = append(cs, &component{Name: name, CRISocket: filepath.Join(nd, "cri.sock"), Args: []string{"node",
			"--name=" + name, fmt.Sprintf("--index=%d", i), "--kubeconfig=" + kc, "--dir=" + nd,
			fmt.Sprintf("--port=%d", o.kubeletPortBase+i), fmt.Sprintf("--cpu=%d", o.cpu), "--memory=" + o.memory,
			fmt.Sprintf("--max-pods=%d", o.maxPods),
			"--client-ca=" + p.path("ca.crt")}})
	}
	for _, c := range cs {
		c.Log = filepath.Join(logs, c.Name+".log")
	}
	return cs
}

func up(o *clusterOptions) error {
	if s, err := loadState(o.dir); err == nil && allAlive(s) {
		if err := waitReady(o); err == nil {
			fmt.Printf("local cluster already up (%d components); nothing to do.\n", len(s.Components))
			printUsage(s)
			return nil
		}
	}
	// Leftovers of a previous run: stop them, then start from a clean directory.
	_ = down(o)
	for _, port := range []int{o.port, o.etcdPort, o.etcdPort + 1} {
		if !portFree(port) {
			return fmt.Errorf("port %d on 127.0.0.1 is in use by another program: free it or set APISERVER_PORT/ETCD_PORT", port)
		}
	}
	if err := os.RemoveAll(o.dir); err != nil {
		return err
	}
	for _, d := range []string{o.dir, filepath.Join(o.dir, "logs"), filepath.Join(o.dir, "nodes")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	t0 := time.Now()
	p := pki{dir: filepath.Join(o.dir, "pki")}
	if err := p.generate(); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	n, err := createNet(o.dir, o.nodes)
	if err != nil {
		return err
	}
	server := fmt.Sprintf("https://127.0.0.1:%d", o.port)
	s := &state{Dir: o.dir, Server: server, Kubeconfig: filepath.Join(o.dir, "kubeconfig"), Components: o.components(p), Net: n}
	for _, kc := range []string{s.Kubeconfig, filepath.Join(o.dir, "admin.kubeconfig")} {
		if err := p.kubeconfig(kc, server); err != nil {
			return err
		}
	}
	if err := s.save(); err != nil {
		_ = removeNet(o.dir, n)
		return err
	}
	fail := func(err error) error {
		return fmt.Errorf("%w\n(logs are in %s; run 'make cluster-down' to clean up)", err, filepath.Join(o.dir, "logs"))
	}
	if err := start(s, s.get("etcd")); err != nil {
		return fail(err)
	}
	if err := waitTCP(o.etcdPort, 60*time.Second, s.get("etcd")); err != nil {
		return fail(err)
	}
	if err := start(s, s.get("apiserver")); err != nil {
		return fail(err)
	}
	if err := waitAPIServer(s, p, 120*time.Second); err != nil {
		return fail(err)
	}
	for _, c := range s.Components[2:] {
		if err := start(s, c); err != nil {
			return fail(err)
		}
	}
	if err := waitReady(o); err != nil {
		return fail(err)
	}
	fmt.Printf("local cluster up in %.1fs\n", time.Since(t0).Seconds())
	if fresh, err := loadState(o.dir); err == nil {
		s = fresh
	}
	printUsage(s)
	return nil
}

func allAlive(s *state) bool {
	for _, c := range s.Components {
		if !alive(c.PID) {
			return false
		}
	}
	return len(s.Components) > 0
}

func waitTCP(port int, timeout time.Duration, c *component) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
			conn.Close()
			return nil
		}
		if !alive(c.PID) {
			return fmt.Errorf("%s exited during start-up: see %s", c.Name, c.Log)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s did not listen on port %d within %s: see %s", c.Name, port, timeout, c.Log)
}

func waitAPIServer(s *state, p pki, timeout time.Duration) error {
	c := s.get("apiserver")
	cert, err := tls.LoadX509KeyPair(p.path("admin.crt"), p.path("admin.key"))
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(p.path("ca.crt"))
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	hc := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		Certificates: []tls.Certificate{cert}, RootCAs: pool}}}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		resp, err := hc.Get(s.Server + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		if !alive(c.PID) {
			return fmt.Errorf("apiserver exited during start-up: see %s", c.Log)
		}
		time.Sleep(300 * time.Millisecond)
	}
	return fmt.Errorf("apiserver not ready within %s: see %s", timeout, c.Log)
}

func client(s *state) (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 5 * time.Second
	return kubernetes.NewForConfig(cfg)
}

func nodeReady(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// waitReady waits until every node is Ready and the default service account exists.
func waitReady(o *clusterOptions) error {
	s, err := loadState(o.dir)
	if err != nil {
		return fmt.Errorf("no cluster state in %s: run 'make cluster-up'", o.dir)
	}
	cs, err := client(s)
	if err != nil {
		return err
	}
	want := 0
	for _, c := range s.Components {
		if strings.HasPrefix(c.Name, "node-") {
			want++
		}
	}
	deadline := time.Now().Add(o.timeout)
	last := ""
	for time.Now().Before(deadline) {
		for _, c := range s.Components {
			if !alive(c.PID) {
				return fmt.Errorf("%s is not running: see %s", c.Name, c.Log)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		ready := 0
		if err == nil {
			for i := range nodes.Items {
				if nodeReady(&nodes.Items[i]) {
					ready++
				}
			}
			last = fmt.Sprintf("%d/%d nodes Ready", ready, want)
		} else {
			last = err.Error()
		}
		saOK := false
		if ready == want {
			_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
			saOK = err == nil
			if !saOK {
				last = "waiting for the default service account"
			}
		}
		cancel()
		if ready == want && saOK {
			if len(nodes.Items) > 0 {
				s.Version = nodes.Items[0].Status.NodeInfo.KubeletVersion
				_ = s.save()
			}
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("cluster not ready within %s: %s", o.timeout, last)
}

func printUsage(s *state) {
	fmt.Printf(`
Kubernetes %s on %s (%d nodes)
  export KUBECONFIG=%s
  kubectl get nodes
Logs: %s/<component>.log   Status: make cluster-status   Stop: make cluster-down
`, s.Version, s.Server, len(s.Components)-4, s.Kubeconfig, filepath.Join(s.Dir, "logs"))
}

func down(o *clusterOptions) error {
	s, err := loadState(o.dir)
	if err == nil {
		// Nodes first, etcd last.
		for i := len(s.Components) - 1; i >= 0; i-- {
			stop(s.Components[i].PID, 10*time.Second)
		}
	}
	for _, pid := range markedPIDs(o.dir) {
		stop(pid, 5*time.Second)
	}
	if left := markedPIDs(o.dir); len(left) > 0 {
		return fmt.Errorf("processes still running after SIGKILL: %v", left)
	}
	var n *clusterNet
	if s != nil {
		n = s.Net
	}
	if nerr := removeNet(o.dir, n); nerr != nil {
		return nerr
	}
	if left := leftoverNet(o.dir, n); len(left) > 0 {
		return fmt.Errorf("network namespaces or interfaces left after removing them: %v", left)
	}
	if err == nil {
		fmt.Println("local cluster stopped; no process, network namespace or interface left")
	}
	return nil
}

func restart(o *clusterOptions, name string) error {
	s, err := loadState(o.dir)
	if err != nil {
		return fmt.Errorf("no cluster state in %s: run 'make cluster-up'", o.dir)
	}
	c := s.get(name)
	if c == nil {
		names := []string{}
		for _, c := range s.Components {
			names = append(names, c.Name)
		}
		return fmt.Errorf("no component %q; components: %s", name, strings.Join(names, ", "))
	}
	stop(c.PID, 10*time.Second)
	if err := start(s, c); err != nil {
		return err
	}
	if name == "apiserver" {
		return waitAPIServer(s, pki{dir: filepath.Join(o.dir, "pki")}, 120*time.Second)
	}
	return nil
}

func showStatus(o *clusterOptions) error {
	s, err := loadState(o.dir)
	if err != nil {
		fmt.Printf("local cluster: not started (no %s)\n", statePath(o.dir))
		return nil
	}
	fmt.Printf("local cluster in %s\n  server: %s\n  kubeconfig: %s\n  version: %s\n\n", s.Dir, s.Server, s.Kubeconfig, s.Version)
	fmt.Printf("%-20s %-8s %-8s %s\n", "COMPONENT", "PID", "STATE", "LOG")
	for _, c := range s.Components {
		st := "stopped"
		if alive(c.PID) {
			st = "running"
		}
		fmt.Printf("%-20s %-8d %-8s %s\n", c.Name, c.PID, st, c.Log)
	}
	cs, err := client(s)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Printf("\nnodes: API not reachable: %v\n", err)
		return nil
	}
	pods, _ := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	perNode := map[string]int{}
	if pods != nil {
		for _, p := range pods.Items {
			perNode[p.Spec.NodeName]++
		}
	}
	sort.Slice(nodes.Items, func(i, j int) bool { return nodes.Items[i].Name < nodes.Items[j].Name })
	fmt.Printf("\n%-10s %-6s %-10s %-5s %-8s %-5s %s\n", "NODE", "READY", "VERSION", "CPU", "MEMORY", "PODS", "CRI SOCKET")
	for i := range nodes.Items {
		n := &nodes.Items[i]
		sock := ""
		if c := s.get(n.Name); c != nil {
			sock = c.CRISocket
		}
		fmt.Printf("%-10s %-6v %-10s %-5s %-8s %-5d %s\n", n.Name, nodeReady(n), n.Status.NodeInfo.KubeletVersion,
			n.Status.Capacity.Cpu().String(), n.Status.Capacity.Memory().String(), perNode[n.Name], sock)
	}
	return nil
}
