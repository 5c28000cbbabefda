package main

// "cluster traffic": a test client that sends a steady, bounded request rate to a
// Service's ready endpoints, the way a client behind kube-proxy would see them: it
// follows the Service's EndpointSlices and applies each change only after a
// propagation delay (default 1 s, the lag of a real data plane). It stops by itself
// after --count requests or --duration, whichever comes first (or on SIGINT/SIGTERM),
// and reports requests sent and failed: in total, per second, by pod and by the image
// that answered (read from the app's reply, see package app).
//
// It only ever connects to endpoint addresses inside the test bed's network
// (198.18.0.0/15) or loopback; any other address is counted as failed, not contacted.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

type trafficOptions struct {
	kubeconfig, namespace, service, port, path, out string
	rate                                            float64
	count                                           int
	duration, delay, timeout, wait                  time.Duration
}

type endpoint struct {
	addr, pod string
}

type bucket struct {
	Second int `json:"second"`
	Sent   int `json:"sent"`
	Failed int `json:"failed"`
	// Endpoints is how many endpoints the client used at the start of this second.
	Endpoints int `json:"endpoints"`
}

type podCount struct {
	Sent   int `json:"sent"`
	Failed int `json:"failed"`
}

type trafficReport struct {
	Service         string               `json:"service"`
	Rate            float64              `json:"rate"`
	DelaySeconds    float64              `json:"delay_seconds"`
	Started         time.Time            `json:"started"`
	DurationSeconds float64              `json:"duration_seconds"`
	Sent            int                  `json:"sent"`
	OK              int                  `json:"ok"`
	Failed          int                  `json:"failed"`
	PerSecond       []*bucket            `json:"per_second"`
	ByPod           map[string]*podCount `json:"by_pod"`
	ByImage         map[string]int       `json:"by_image"`
	Failures        map[string]int       `json:"failures"`
	EndpointChanges int                  `json:"endpoint_changes"`
}

func runTraffic(args []string) int {
	o := trafficOptions{}
	fs := flag.NewFlagSet("traffic", flag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", envOr("KUBECONFIG", envOr("CLUSTERDIR", ".cluster")+"/kubeconfig"), "kubeconfig")
	fs.StringVar(&o.namespace, "namespace", "default", "namespace of the Service")
	fs.StringVar(&o.service, "service", "", "Service name (required)")
	fs.StringVar(&o.port, "port", "", "EndpointSlice port name to use (default: the first port)")
	fs.StringVar(&o.path, "path", "/", "HTTP path to request")
	fs.StringVar(&o.out, "out", "", "write the JSON report here (default: stdout)")
	fs.Float64Var(&o.rate, "rate", 50, "requests per second (1..1000)")
	fs.IntVar(&o.count, "count", 0, "stop after this many requests (default: rate x duration)")
	fs.DurationVar(&o.duration, "duration", 30*time.Second, "stop after this long (at most 1h)")
	fs.DurationVar(&o.delay, "delay", time.Second, "propagation delay: an EndpointSlice change is used this long after it is seen")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Second, "per-request timeout")
	fs.DurationVar(&o.wait, "wait-ready", 60*time.Second, "before sending, wait this long for at least one ready endpoint")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	switch {
	case o.service == "":
		fmt.Fprintln(os.Stderr, "traffic: --service is required")
		return 2
	case o.rate < 1 || o.rate > 1000:
		fmt.Fprintf(os.Stderr, "traffic: --rate %v: must be 1..1000 requests per second\n", o.rate)
		return 2
	case o.duration <= 0 || o.duration > time.Hour:
		fmt.Fprintf(os.Stderr, "traffic: --duration %s: must be more than 0 and at most 1h\n", o.duration)
		return 2
	case o.delay < 0 || o.timeout <= 0 || o.count < 0:
		fmt.Fprintln(os.Stderr, "traffic: --delay must be >= 0, --timeout > 0, --count >= 0")
		return 2
	}
	if o.count == 0 {
		o.count = int(o.rate * o.duration.Seconds())
	}
	rep, err := traffic(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "traffic: %v\n", err)
		return 1
	}
	b, _ := json.MarshalIndent(rep, "", "  ")
	if o.out != "" {
		// Written whole, then renamed: a reader never sees half a report.
		err := os.WriteFile(o.out+".tmp", append(b, '\n'), 0o644)
		if err == nil {
			err = os.Rename(o.out+".tmp", o.out)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "traffic: %v\n", err)
			return 1
		}
		fmt.Printf("traffic to %s: sent %d, ok %d, failed %d in %.1fs (report: %s)\n",
			rep.Service, rep.Sent, rep.OK, rep.Failed, rep.DurationSeconds, o.out)
	} else {
		fmt.Println(string(b))
	}
	return 0
}

// endpointTable is the set of endpoints the client uses, updated after the delay.
type endpointTable struct {
	mu      sync.Mutex
	current []endpoint
	changes int
	next    int
}

func (t *endpointTable) set(eps []endpoint) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.current = eps
	t.changes++
}

func (t *endpointTable) pick() (endpoint, int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.current) == 0 {
		return endpoint{}, 0, false
	}
	t.next = (t.next + 1) % len(t.current)
	return t.current[t.next], len(t.current), true
}

func (t *endpointTable) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.current)
}

// allowedTarget: loopback or the test bed's range, nothing else.
func allowedTarget(ip string) bool {
	a := net.ParseIP(ip)
	_, bench, _ := net.ParseCIDR(netRange + "/15")
	return a != nil && (a.IsLoopback() || bench.Contains(a))
}

// usable computes what kube-proxy would route to from the Service's slices: ready
// endpoints; when none is ready, the serving ones that are terminating.
func usable(slices []*discoveryv1.EndpointSlice, portName string) []endpoint {
	var ready, terminating []endpoint
	for _, s := range slices {
		port := int32(0)
		for _, p := range s.Ports {
			if p.Port != nil && (portName == "" || (p.Name != nil && *p.Name == portName)) {
				port = *p.Port
				break
			}
		}
		if port == 0 {
			continue
		}
		for _, e := range s.Endpoints {
			if len(e.Addresses) == 0 {
				continue
			}
			ep := endpoint{addr: net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(port)))}
			if e.TargetRef != nil {
				ep.pod = e.TargetRef.Name
			}
			c := e.Conditions
			switch {
			case c.Ready == nil || *c.Ready:
				ready = append(ready, ep)
			case c.Serving != nil && *c.Serving && c.Terminating != nil && *c.Terminating:
				terminating = append(terminating, ep)
			}
		}
	}
	if len(ready) == 0 {
		ready = terminating
	}
	sort.Slice(ready, func(i, j int) bool { return ready[i].addr < ready[j].addr })
	return ready
}

func traffic(o trafficOptions) (*trafficReport, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", o.kubeconfig, err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)

	table := &endpointTable{}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(o.namespace),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
			lo.LabelSelector = discoveryv1.LabelServiceName + "=" + o.service
		}))
	inf := factory.Discovery().V1().EndpointSlices()
	lister := inf.Lister()
	// Each change is applied delay after it was seen, in order.
	type change struct {
		at  time.Time
		eps []endpoint
	}
	changes := make(chan change, 1024)
	snapshot := func() {
		all, _ := lister.List(labels.Everything())
		changes <- change{time.Now(), usable(all, o.port)}
	}
	_, _ = inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { snapshot() }, UpdateFunc: func(any, any) { snapshot() }, DeleteFunc: func(any) { snapshot() },
	})
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case c := <-changes:
				if d := time.Until(c.at.Add(o.delay)); d > 0 {
					select {
					case <-ctx.Done():
						return
					case <-time.After(d):
					}
				}
				table.set(c.eps)
			}
		}
	}()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.Informer().HasSynced) {
		return nil, errors.New("EndpointSlice informer did not sync")
	}
	deadline := time.Now().Add(o.wait)
	for table.size() == 0 {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("service %s/%s has no ready endpoint after %s", o.namespace, o.service, o.wait)
		}
		time.Sleep(100 * time.Millisecond)
	}

	hc := &http.Client{Timeout: o.timeout, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: (&net.Dialer{Timeout: o.timeout}).DialContext}}
	rep := &trafficReport{Service: o.namespace + "/" + o.service, Rate: o.rate, DelaySeconds: o.delay.Seconds(),
		Started: time.Now().UTC(), ByPod: map[string]*podCount{}, ByImage: map[string]int{}, Failures: map[string]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	record := func(sec int, pod, image, failure string) {
		mu.Lock()
		defer mu.Unlock()
		for len(rep.PerSecond) <= sec {
			rep.PerSecond = append(rep.PerSecond, &bucket{Second: len(rep.PerSecond)})
		}
		b := rep.PerSecond[sec]
		pc := rep.ByPod[pod]
		if pc == nil {
			pc = &podCount{}
			rep.ByPod[pod] = pc
		}
		rep.Sent++
		b.Sent++
		pc.Sent++
		if failure != "" {
			rep.Failed++
			b.Failed++
			pc.Failed++
			rep.Failures[failure]++
			return
		}
		rep.OK++
		rep.ByImage[image]++
	}
	start := time.Now()
	interval := time.Duration(float64(time.Second) / o.rate)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	stopAt := start.Add(o.duration)
	inflight := make(chan struct{}, 1000)
loop:
	for sent := 0; sent < o.count; sent++ {
		select {
		case <-sig:
			break loop
		case now := <-tick.C:
			if now.After(stopAt) {
				break loop
			}
			sec := int(now.Sub(start) / time.Second)
			ep, n, ok := table.pick()
			mu.Lock()
			for len(rep.PerSecond) <= sec {
				rep.PerSecond = append(rep.PerSecond, &bucket{Second: len(rep.PerSecond), Endpoints: n})
			}
			mu.Unlock()
			if !ok {
				record(sec, "", "", "no endpoint")
				continue
			}
			host, _, _ := net.SplitHostPort(ep.addr)
			if !allowedTarget(host) {
				record(sec, ep.pod, "", "address outside the test bed, not contacted")
				continue
			}
			select {
			case inflight <- struct{}{}:
			default:
				record(sec, ep.pod, "", "too many requests in flight")
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-inflight }()
				image, failure := request(hc, "http://"+ep.addr+o.path)
				record(sec, ep.pod, image, failure)
			}()
		}
	}
	wg.Wait()
	rep.DurationSeconds = time.Since(start).Seconds()
	rep.EndpointChanges = table.changes
	return rep, nil
}

// request does one GET; it returns the image named in the reply, or why it failed.
func request(hc *http.Client, url string) (string, string) {
	resp, err := hc.Get(url)
	if err != nil {
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			return "", "timeout"
		case strings.Contains(err.Error(), "connection refused"):
			return "", "connection refused"
		case strings.Contains(err.Error(), "connection reset"):
			return "", "connection reset"
		case strings.Contains(err.Error(), "EOF"):
			return "", "connection closed"
		}
		return "", "error: " + err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return "", "HTTP " + strconv.Itoa(resp.StatusCode)
	}
	for _, f := range strings.Fields(string(body)) {
		if v, ok := strings.CutPrefix(f, "image="); ok {
			return v, ""
		}
	}
	return "(unknown)", ""
}
