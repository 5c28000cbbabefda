package main

// A simulated node: the real kubelet code (as kubemark's hollow node wires it) talking
// over a real CRI unix socket to the fake runtime in runtime.go.

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	kubeletapp "k8s.io/kubernetes/cmd/kubelet/app"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	cadvisortest "k8s.io/kubernetes/pkg/kubelet/cadvisor/testing"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"
	"k8s.io/kubernetes/pkg/kubemark"
	"k8s.io/kubernetes/pkg/volume/util/hostutil"
)

// machine reports the configured CPU and memory instead of cadvisor's fake 1 core.
type machine struct {
	*cadvisortest.Fake
	cores  int
	memory uint64
}

// (MachineInfo, whose signature changed in 1.37, is in compat_*137.go.)
func (m *machine) info() *cadvisorMachineInfo {
	return &cadvisorMachineInfo{
		NumCores:         m.cores,
		NumPhysicalCores: m.cores,
		NumSockets:       1,
		InstanceID:       cadvisorInstanceID(m.NodeName),
		MemoryCapacity:   m.memory,
		MachineID:        m.NodeName,
		SystemUUID:       m.NodeName,
		BootID:           m.NodeName,
	}
}

func runNode(args []string) int {
	fs := flag.NewFlagSet("node", flag.ExitOnError)
	name := fs.String("name", "node-1", "node name")
	index := fs.Int("index", 1, fmt.Sprintf("node index 1..%d: selects the node IP and the pod IP range in the cluster's network", maxNodes))
	clusterDir := fs.String("cluster-dir", os.Getenv(markerEnv), "the cluster's directory (its state.json holds the network)")
	clientCA := fs.String("client-ca", "", "CA of the client certificates the kubelet accepts (default: the cluster's CA)")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig for the API server")
	dir := fs.String("dir", "", "node state directory (CRI socket, kubelet root)")
	port := fs.Int("port", 10250, "kubelet port on the node IP")
	cpu := fs.Int("cpu", 4, "CPU cores the node reports")
	memory := fs.String("memory", "8Gi", "memory the node reports")
	maxPods := fs.Int("max-pods", 110, "max pods")
	labels := fs.String("labels", "", "extra node labels k=v,k=v")
	cpuPolicy := fs.String("cpu-manager-policy", "none", "CPU manager policy the node reports: none or static")
	_ = fs.Parse(args)
	if *kubeconfig == "" || *dir == "" || *clusterDir == "" {
		fmt.Fprintln(os.Stderr, "node: --kubeconfig, --dir and --cluster-dir (or $"+markerEnv+") are required")
		return 2
	}
	if *clientCA == "" {
		*clientCA = filepath.Join(*clusterDir, "pki", "ca.crt")
	}
	pn, err := nodeNet(*clusterDir, *index)
	if err != nil {
		fmt.Fprintf(os.Stderr, "node: %v\n", err)
		return 1
	}
	memBytes, err := parseBytes(*memory)
	if err != nil {
		fmt.Fprintf(os.Stderr, "node: --memory: %v\n", err)
		return 2
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	rootDir := filepath.Join(*dir, "kubelet")
	for _, d := range []string{rootDir, filepath.Join(rootDir, "pod-logs"), filepath.Join(rootDir, "static")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			fmt.Fprintf(os.Stderr, "node: %v\n", err)
			return 1
		}
	}
	socket := filepath.Join(*dir, "cri.sock")
	pn.sweep()
	rt, err := newFakeRuntime(rootDir, pn)
	if err != nil {
		fmt.Fprintf(os.Stderr, "node: %v\n", err)
		return 1
	}
	if err := rt.startStreaming(); err != nil {
		fmt.Fprintf(os.Stderr, "node: %v\n", err)
		return 1
	}
	if err := rt.serve(socket); err != nil {
		fmt.Fprintf(os.Stderr, "node: %v\n", err)
		return 1
	}
	endpoint := "unix://" + socket

	restCfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "node: kubeconfig: %v\n", err)
		return 1
	}
	restCfg.UserAgent = "kubelet/" + *name
	restCfg.ContentType = "application/vnd.kubernetes.protobuf"
	restCfg.QPS, restCfg.Burst = 50, 100
	client := clientset.NewForConfigOrDie(restCfg)
	hb := *restCfg
	hb.Timeout = 10 * time.Second
	hb.QPS = -1
	heartbeat := clientset.NewForConfigOrDie(&hb)

	runtimeService, imageService, err := criClients(ctx, endpoint)
	if err != nil {
		fmt.Fprintf(os.Stderr, "node: CRI client: %v\n", err)
		return 1
	}

	f, c, err := kubeletConfig(*name, rootDir, endpoint, pn.nodeIP, *clientCA, *port, *maxPods, *labels)
	if err != nil {
		fmt.Fprintf(os.Stderr, "node: %v\n", err)
		return 1
	}
	rt.podSpec = podSpecLookup(ctx, client, *name)
	hk := kubemark.NewHollowKubelet(f, c, client, heartbeat,
		&machine{Fake: &cadvisortest.Fake{NodeName: *name}, cores: *cpu, memory: memBytes},
		imageService, runtimeService, newContainerManager(*cpuPolicy, *cpu, memBytes))
	// Serve HTTPS with a self-signed certificate and authenticate and authorise callers as
	// a real kubelet does (kubemark's wiring skips both): the API server reaches this
	// kubelet at the node IP for logs, exec and attach.
	if hk.KubeletDeps.TLSOptions, err = kubeletTLS(ctx, f, c); err != nil {
		fmt.Fprintf(os.Stderr, "node: kubelet TLS: %v\n", err)
		return 1
	}
	auth, runCAReload, err := kubeletapp.BuildAuth(types.NodeName(*name), client, *c)
	if err != nil {
		fmt.Fprintf(os.Stderr, "node: kubelet auth: %v\n", err)
		return 1
	}
	hk.KubeletDeps.Auth = auth
	// subPath mounts as a kubelet makes them, by copy (subpath.go); kubemark's fakes refuse them.
	hk.KubeletDeps.Subpather = snapshotSubpath{}
	hk.KubeletDeps.HostUtil = fileHostUtil{hostutil.NewFakeHostUtil(nil)}
	runCAReload(ctx.Done())
	// The kubelet's own prober: probes reach the pods' processes over the test bed's bridge.
	hk.KubeletDeps.ProbeManager = nil
	// Events to the API server, as a real kubelet records them (kubemark's wiring drops them):
	// a failing probe is an Unhealthy event on its pod ("Readiness probe failed: ..."). Through a
	// client of their own, as the kubelet's EventClient (eventRecordQPS 50, eventBurst 100), so that
	// events never wait behind pod status updates.
	ev := *restCfg
	ev.QPS, ev.Burst = 50, 100
	events := record.NewBroadcaster(record.WithContext(ctx))
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: clientset.NewForConfigOrDie(&ev).CoreV1().Events("")})
	hk.KubeletDeps.Recorder = events.NewRecorder(scheme.Scheme, v1.EventSource{Component: "kubelet", Host: *name})

	go hk.Run(ctx)
	klog.Infof("node %s: kubelet on %s:%d, CRI socket %s, pods from %s", *name, pn.nodeIP, *port, socket, pn.base)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	klog.Infof("node %s: stopping", *name)
	cancel()
	rt.server.Stop()
	rt.shutdown()
	_ = os.Remove(socket)
	return 0
}

// podSpecLookup watches the pods bound to this node and finds a pod's spec by name.
func podSpecLookup(ctx context.Context, client clientset.Interface, node string) func(string, string) *v1.PodSpec {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", node).String()
		}))
	lister := factory.Core().V1().Pods().Lister()
	factory.Start(ctx.Done())
	return func(namespace, name string) *v1.PodSpec {
		p, err := lister.Pods(namespace).Get(name)
		if err != nil {
			// Not in the cache yet: ask the API server.
			c, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if p, err = client.CoreV1().Pods(namespace).Get(c, name, metav1.GetOptions{}); err != nil {
				return nil
			}
		}
		return &p.Spec
	}
}

func kubeletConfig(name, rootDir, endpoint, nodeIP, clientCA string, port, maxPods int, extraLabels string) (*options.KubeletFlags, *kubeletconfig.KubeletConfiguration, error) {
	f := options.NewKubeletFlags()
	f.RootDirectory = rootDir
	f.CertDirectory = filepath.Join(rootDir, "pki")
	f.HostnameOverride = name
	f.NodeIP = nodeIP
	f.MinimumGCAge = metav1.Duration{Duration: time.Minute}
	f.MaxContainerCount = 200
	f.MaxPerPodContainerCount = 2
	f.NodeLabels = map[string]string{"inplace.k8s/local-cluster": "true"}
	for _, kv := range strings.Split(extraLabels, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			f.NodeLabels[k] = v
		}
	}

	c, err := options.NewKubeletConfiguration()
	if err != nil {
		return nil, nil, err
	}
	c.ContainerRuntimeEndpoint = endpoint
	c.ImageServiceEndpoint = endpoint
	c.StaticPodURL = ""
	c.StaticPodPath = filepath.Join(rootDir, "static")
	c.EnableServer = true
	c.Address = nodeIP
	c.Authentication.X509.ClientCAFile = clientCA
	c.Port = int32(port)
	c.ReadOnlyPort = 0
	c.HealthzPort = 0
	c.FileCheckFrequency.Duration = 20 * time.Second
	c.HTTPCheckFrequency.Duration = 20 * time.Second
	c.NodeStatusUpdateFrequency.Duration = 10 * time.Second
	c.NodeStatusReportFrequency.Duration = time.Minute
	c.SyncFrequency.Duration = 10 * time.Second
	c.EvictionPressureTransitionPeriod.Duration = 5 * time.Minute
	c.EvictionHard = map[string]string{}
	c.MaxPods = int32(maxPods)
	c.PodsPerCore = 0
	// A cluster DNS address as kubeadm picks it (the 10th of the Service range, orchestrate.go). No DNS
	// server answers there and nothing in the test bed resolves names (the runtime ignores the sandbox's
	// DNS config), but without it the kubelet records a MissingClusterDNS warning on every pod sync, which
	// uses up the pod's Warning events (25, then one per 5 minutes) before its probe failures are recorded.
	c.ClusterDNS = []string{"10.96.0.10"}
	c.ClusterDomain = "cluster.local"
	c.ImageGCHighThresholdPercent = 90
	c.ImageGCLowThresholdPercent = 80
	c.ProviderID = "inplace-local://" + name
	c.VolumeStatsAggPeriod.Duration = time.Minute
	c.CgroupRoot = ""
	c.CgroupsPerQOS = false
	c.EnforceNodeAllocatable = []string{}
	c.CPUCFSQuota = true
	c.EnableControllerAttachDetach = false
	c.EnableDebuggingHandlers = true
	c.HairpinMode = kubeletconfig.HairpinVeth
	c.MaxOpenFiles = 1024
	c.RegistryBurst = 50
	c.RegistryPullQPS = 50
	c.ResolverConfig = kubetypes.ResolvConfDefault
	c.KubeletCgroups = ""
	c.SystemCgroups = ""
	c.SerializeImagePulls = false
	c.ProtectKernelDefaults = false
	c.RegisterNode = true
	c.LocalStorageCapacityIsolation = true
	c.PodLogsDir = filepath.Join(rootDir, "pod-logs")
	c.FailSwapOn = false
	c.KubeAPIQPS = 50
	c.KubeAPIBurst = 100
	return f, c, nil
}

func parseBytes(s string) (uint64, error) {
	units := map[string]uint64{"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "": 1}
	for suffix, mult := range units {
		if suffix != "" && strings.HasSuffix(s, suffix) {
			var n uint64
			if _, err := fmt.Sscanf(strings.TrimSuffix(s, suffix), "%d", &n); err != nil {
				return 0, fmt.Errorf("%q is not a quantity like 8Gi", s)
			}
			return n * mult, nil
		}
	}
	var n uint64
	if _, err := fmt.Sscanf(s, "%d", &n); err != nil {
		return 0, fmt.Errorf("%q is not a quantity like 8Gi", s)
	}
	return n, nil
}
