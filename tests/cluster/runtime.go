package main

// A CRI runtime served over a real unix socket. Sandboxes are real network namespaces
// (netbed.go) and every running container is a real OS process: the simulated app
// (package app), PID 1 of its own PID namespace, serving HTTP on the container's ports
// at the pod IP. Images are not real: the runtime keeps image records in memory and
// reports them the way containerd does. Beyond that it behaves like a container
// runtime as far as the kubelet can tell: container IDs that change on every
// (re)creation, labels and annotations round-tripped (so the kubelet's container-hash
// logic works), resources echoed back after UpdateContainerResources (so in-place
// resize completes), SIGTERM then SIGKILL on StopContainer, ExecSync and streaming exec
// run commands inside the container's namespaces, and behaviours selected by the image
// tag (app.Parse): -pullfail, -pullN, -slowN, -crash, -readyN, -drainN, -ignoreterm.
//
// Stopping a container through the socket (crictl stop, or any CRI client) stops its
// process; the kubelet then restarts it according to the pod's restartPolicy.

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/inplace-k8s/localcluster/app"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const initDuration = 500 * time.Millisecond

type sandbox struct {
	id        string
	config    *runtimeapi.PodSandboxConfig
	state     runtimeapi.PodSandboxState
	createdAt int64
	ip        string
	handler   string
	slot      int    // offset of ip in the node's pod range; 0 for host-network sandboxes
	netns     string // network namespace file; "" for host-network sandboxes
}

type container struct {
	id         string
	sandboxID  string
	config     *runtimeapi.ContainerConfig
	image      string // normalised reference as the runtime reports it
	imageRef   string // repo digest
	imageID    string
	state      runtimeapi.ContainerState
	createdAt  int64
	startedAt  int64
	finishedAt int64
	exitCode   int32
	reason     string
	message    string
	resources  *runtimeapi.LinuxContainerResources
	logPath    string
	proc       *os.Process   // the app process while the container runs (nil: simulated init container)
	done       chan struct{} // closed once the process has exited and the container is marked exited
}

type image struct {
	id         string
	name       string // normalised name:tag or name@digest
	repoDigest string
}

type fakeRuntime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer

	mu         sync.Mutex
	rootDir    string
	net        *podNet
	slots      map[int]bool // pod range offsets in use
	nextSlot   int
	appBin     []string // command line that starts the app
	watchR     *os.File // read end of a pipe every app watches: EOF means this runtime died
	watchW     *os.File
	sandboxes  map[string]*sandbox
	containers map[string]*container
	images     map[string]*image // by normalised reference
	server     *grpc.Server
	streamer   streamServer
	// podSpec, when set, finds a pod's spec so that plain init containers can complete.
	podSpec func(namespace, name string) *v1.PodSpec
}

func newFakeRuntime(rootDir string, pn *podNet) (*fakeRuntime, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	appBin := []string{self, "app"}
	if small := filepath.Join(filepath.Dir(self), "cluster-app"); fileExists(small) {
		appBin = []string{small}
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	return &fakeRuntime{
		rootDir:    rootDir,
		net:        pn,
		slots:      map[int]bool{},
		appBin:     appBin,
		watchR:     r,
		watchW:     w,
		sandboxes:  map[string]*sandbox{},
		containers: map[string]*container{},
		images:     map[string]*image{},
	}, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// serve listens on the unix socket path and serves the CRI runtime and image services.
func (f *fakeRuntime) serve(socket string) error {
	_ = os.Remove(socket)
	l, err := net.Listen("unix", socket)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", socket, err)
	}
	f.server = grpc.NewServer(grpc.MaxRecvMsgSize(16<<20), grpc.MaxSendMsgSize(16<<20))
	runtimeapi.RegisterRuntimeServiceServer(f.server, f)
	runtimeapi.RegisterImageServiceServer(f.server, f)
	go func() { _ = f.server.Serve(l) }()
	return nil
}

func newID() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func now() int64 { return time.Now().UnixNano() }

// normaliseImage returns the reference the way containerd reports it:
// docker.io/ for names without a registry, library/ for single-component Docker Hub
// names, and :latest when neither tag nor digest is given.
func normaliseImage(ref string) string {
	name, rest := ref, ""
	if i := strings.Index(ref, "@"); i >= 0 {
		name, rest = ref[:i], ref[i:]
	}
	tag := ""
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, tag = name[:i], name[i:]
	}
	first := name
	if i := strings.Index(name, "/"); i >= 0 {
		first = name[:i]
	}
	hasRegistry := strings.ContainsAny(first, ".:") || first == "localhost"
	if !strings.Contains(name, "/") || !hasRegistry {
		if !strings.Contains(name, "/") {
			name = "library/" + name
		}
		name = "docker.io/" + name
	}
	if tag == "" && rest == "" {
		tag = ":latest"
	}
	return name + tag + rest
}

// repoOf strips the tag and digest from a normalised reference.
func repoOf(norm string) string {
	if i := strings.Index(norm, "@"); i >= 0 {
		norm = norm[:i]
	}
	if i := strings.LastIndex(norm, ":"); i > strings.LastIndex(norm, "/") {
		norm = norm[:i]
	}
	return norm
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// imageFor computes the deterministic identity of a reference: the same content for a
// tag and for repo@sha256:<the digest reported for that tag>.
func imageFor(ref string) *image {
	norm := normaliseImage(ref)
	repo := repoOf(norm)
	digest := ""
	if i := strings.Index(norm, "@"); i >= 0 {
		digest = norm[i+1:]
	} else {
		digest = "sha256:" + sum(norm)
	}
	return &image{
		id:         "sha256:" + sum("config:"+repo+"@"+digest),
		name:       norm,
		repoDigest: repo + "@" + digest,
	}
}

// ---- runtime service ----

func (f *fakeRuntime) Version(_ context.Context, _ *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{
		Version: "0.1.0", RuntimeName: "inplace-fake-cri", RuntimeVersion: "0.1.0", RuntimeApiVersion: "v1",
	}, nil
}

func (f *fakeRuntime) Status(_ context.Context, _ *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true},
		{Type: runtimeapi.NetworkReady, Status: true},
	}}}, nil
}

func (f *fakeRuntime) RuntimeConfig(_ context.Context, _ *runtimeapi.RuntimeConfigRequest) (*runtimeapi.RuntimeConfigResponse, error) {
	return &runtimeapi.RuntimeConfigResponse{Linux: &runtimeapi.LinuxRuntimeConfiguration{
		CgroupDriver: runtimeapi.CgroupDriver_CGROUPFS,
	}}, nil
}

func (f *fakeRuntime) UpdateRuntimeConfig(_ context.Context, _ *runtimeapi.UpdateRuntimeConfigRequest) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
}

// allocateSlot reserves the next free offset of the node's pod range, round robin so
// that a pod IP is not handed out again right after it was released; callers hold f.mu.
func (f *fakeRuntime) allocateSlot() int {
	const n = nodePodSlots - 2 // offsets 1..510
	for i := 0; i < n; i++ {
		slot := (f.nextSlot+i)%n + 1
		if !f.slots[slot] {
			f.slots[slot] = true
			f.nextSlot = slot % n
			return slot
		}
	}
	return 0
}

func (f *fakeRuntime) RunPodSandbox(_ context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	s := &sandbox{
		id:        newID(),
		config:    req.GetConfig(),
		state:     runtimeapi.PodSandboxState_SANDBOX_READY,
		createdAt: now(),
		handler:   req.GetRuntimeHandler(),
	}
	if s.config.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE {
		s.ip = f.net.nodeIP
	} else {
		f.mu.Lock()
		s.slot = f.allocateSlot()
		f.mu.Unlock()
		if s.slot == 0 {
			return nil, status.Errorf(codes.ResourceExhausted, "no free pod IP in this node's range of %d addresses", nodePodSlots-2)
		}
		s.ip = f.net.podIP(s.slot)
		if err := f.net.setup(s.ip); err != nil {
			f.releaseSlot(s.slot)
			return nil, status.Errorf(codes.Internal, "pod network for %s: %v", s.ip, err)
		}
		s.netns = f.net.nsPath(s.ip)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sandboxes[s.id] = s
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: s.id}, nil
}

func (f *fakeRuntime) releaseSlot(slot int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.slots, slot)
}

// teardownNetwork kills what still runs in the sandbox and deletes its network
// namespace, once; callers hold f.mu, which this releases while ip(8) runs.
func (f *fakeRuntime) teardownNetwork(s *sandbox) {
	for _, c := range f.containers {
		if c.sandboxID == s.id && c.proc != nil {
			_ = c.proc.Kill()
		}
	}
	if s.netns == "" {
		return
	}
	ip, slot := s.ip, s.slot
	s.netns = ""
	f.mu.Unlock()
	if err := f.net.teardown(ip); err != nil {
		fmt.Fprintf(os.Stderr, "runtime: %v\n", err)
	}
	f.mu.Lock()
	delete(f.slots, slot)
}

func (f *fakeRuntime) StopPodSandbox(_ context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.sandboxes[req.PodSandboxId]; ok {
		s.state = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
		for _, c := range f.containers {
			if c.sandboxID == s.id && c.state != runtimeapi.ContainerState_CONTAINER_EXITED && c.proc == nil {
				f.exit(c, 137, "Error", "")
			}
		}
		f.teardownNetwork(s)
	}
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

func (f *fakeRuntime) RemovePodSandbox(_ context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.sandboxes[req.PodSandboxId]; ok {
		f.teardownNetwork(s)
	}
	delete(f.sandboxes, req.PodSandboxId)
	for id, c := range f.containers {
		if c.sandboxID == req.PodSandboxId {
			delete(f.containers, id)
		}
	}
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

// shutdown kills every app process and deletes every pod network namespace of the node.
func (f *fakeRuntime) shutdown() {
	f.mu.Lock()
	for _, c := range f.containers {
		if c.proc != nil {
			_ = c.proc.Kill()
		}
	}
	f.mu.Unlock()
	f.net.sweep()
}

func (f *fakeRuntime) sandboxStatus(s *sandbox) *runtimeapi.PodSandboxStatus {
	return &runtimeapi.PodSandboxStatus{
		Id:        s.id,
		Metadata:  s.config.GetMetadata(),
		State:     s.state,
		CreatedAt: s.createdAt,
		Network:   &runtimeapi.PodSandboxNetworkStatus{Ip: s.ip},
		Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{
			Options: cloneNamespaceOption(orEmptyNS(s.config.GetLinux().GetSecurityContext().GetNamespaceOptions())),
		}},
		Labels:         s.config.GetLabels(),
		Annotations:    s.config.GetAnnotations(),
		RuntimeHandler: s.handler,
	}
}

func orEmptyNS(o *runtimeapi.NamespaceOption) *runtimeapi.NamespaceOption {
	if o == nil {
		return &runtimeapi.NamespaceOption{}
	}
	return o
}

func (f *fakeRuntime) PodSandboxStatus(_ context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.sandboxes[req.PodSandboxId]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "pod sandbox %q not found", req.PodSandboxId)
	}
	resp := &runtimeapi.PodSandboxStatusResponse{Status: f.sandboxStatus(s)}
	for _, c := range f.containers {
		if c.sandboxID == s.id {
			resp.ContainersStatuses = append(resp.ContainersStatuses, f.containerStatus(c))
		}
	}
	resp.Timestamp = now()
	return resp, nil
}

func labelsMatch(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func (f *fakeRuntime) ListPodSandbox(_ context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	flt := req.GetFilter()
	resp := &runtimeapi.ListPodSandboxResponse{}
	for _, s := range f.sandboxes {
		if flt != nil {
			if flt.Id != "" && flt.Id != s.id {
				continue
			}
			if flt.State != nil && flt.State.State != s.state {
				continue
			}
			if !labelsMatch(flt.LabelSelector, s.config.GetLabels()) {
				continue
			}
		}
		resp.Items = append(resp.Items, &runtimeapi.PodSandbox{
			Id: s.id, Metadata: s.config.GetMetadata(), State: s.state, CreatedAt: s.createdAt,
			Labels: s.config.GetLabels(), Annotations: s.config.GetAnnotations(), RuntimeHandler: s.handler,
		})
	}
	sort.Slice(resp.Items, func(i, j int) bool { return resp.Items[i].CreatedAt < resp.Items[j].CreatedAt })
	return resp, nil
}

func (f *fakeRuntime) CreateContainer(_ context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.sandboxes[req.PodSandboxId]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "pod sandbox %q not found", req.PodSandboxId)
	}
	cfg := req.GetConfig()
	ref := cfg.GetImage().GetImage()
	img, ok := f.images[normaliseImage(ref)]
	if !ok {
		// The kubelet passes the image ID or the reference it pulled; accept IDs too.
		for _, i := range f.images {
			if i.id == ref {
				img, ok = i, true
				break
			}
		}
	}
	if !ok {
		return nil, status.Errorf(codes.NotFound, "image %q not found: pull it first", ref)
	}
	// Simulated images hold no file under /nonexistent (the conventional home of the nobody user):
	// a command there fails as a real runtime fails a missing binary, after the image was pulled.
	if cmd := cfg.GetCommand(); len(cmd) > 0 && strings.HasPrefix(cmd[0], "/nonexistent/") {
		return nil, status.Errorf(codes.Unknown, "failed to create containerd task: exec: %q: stat %s: no such file or directory", cmd[0], cmd[0])
	}
	name := img.name
	if u := cfg.GetImage().GetUserSpecifiedImage(); u != "" {
		name = normaliseImage(u)
	}
	c := &container{
		id:        newID(),
		sandboxID: s.id,
		config:    cfg,
		image:     name,
		imageRef:  img.repoDigest,
		imageID:   img.id,
		state:     runtimeapi.ContainerState_CONTAINER_CREATED,
		createdAt: now(),
		resources: cfg.GetLinux().GetResources(),
	}
	if dir := s.config.GetLogDirectory(); dir != "" && cfg.GetLogPath() != "" {
		c.logPath = filepath.Join(dir, cfg.GetLogPath())
		if err := os.MkdirAll(filepath.Dir(c.logPath), 0o755); err == nil {
			_ = os.WriteFile(c.logPath, nil, 0o644)
		}
	}
	f.containers[c.id] = c
	return &runtimeapi.CreateContainerResponse{ContainerId: c.id}, nil
}

func (f *fakeRuntime) StartContainer(_ context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	f.mu.Lock()
	c, ok := f.containers[req.ContainerId]
	if !ok {
		f.mu.Unlock()
		return nil, status.Errorf(codes.NotFound, "container %q not found", req.ContainerId)
	}
	img := c.shownImage()
	f.mu.Unlock()
	b := app.Parse(app.TagOf(img))
	// The pod spec may come from the API server: do not hold f.mu.
	spec := f.containerSpec(c)
	if b.Slow > 0 {
		time.Sleep(b.Slow)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.state != runtimeapi.ContainerState_CONTAINER_CREATED {
		return nil, status.Errorf(codes.FailedPrecondition, "container %q is not in created state", c.id)
	}
	s := f.sandboxes[c.sandboxID]
	if s == nil || s.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, status.Errorf(codes.FailedPrecondition, "pod sandbox of container %q is not ready", c.id)
	}
	if spec.plainInit && !b.Crash {
		// A plain init container does its work and exits successfully (no process).
		c.state = runtimeapi.ContainerState_CONTAINER_RUNNING
		c.startedAt = now()
		id := c.id
		time.AfterFunc(initDuration, func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			if cc, ok := f.containers[id]; ok && cc.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
				f.exit(cc, 0, "Completed", "")
			}
		})
		return &runtimeapi.StartContainerResponse{}, nil
	}
	if err := f.startApp(c, s, img, b.Ports(spec.ports)); err != nil {
		f.exit(c, 128, "StartError", err.Error())
		return nil, status.Errorf(codes.Internal, "start container %q: %v", c.id, err)
	}
	c.state = runtimeapi.ContainerState_CONTAINER_RUNNING
	c.startedAt = now()
	return &runtimeapi.StartContainerResponse{}, nil
}

// shownImage is the image as the pod spec names it (its tag selects the behaviour).
func (c *container) shownImage() string {
	if u := c.config.GetImage().GetUserSpecifiedImage(); u != "" {
		return u
	}
	return c.image
}

// exit marks a container exited; callers hold f.mu.
func (f *fakeRuntime) exit(c *container, code int32, reason, message string) {
	c.state = runtimeapi.ContainerState_CONTAINER_EXITED
	c.finishedAt = now()
	if c.startedAt == 0 {
		c.startedAt = c.finishedAt
	}
	c.exitCode, c.reason, c.message = code, reason, message
}

// StopContainer sends SIGTERM, waits up to the timeout (the kubelet passes the grace
// period left), then sends SIGKILL.
func (f *fakeRuntime) StopContainer(_ context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	f.mu.Lock()
	c, ok := f.containers[req.ContainerId]
	if !ok {
		f.mu.Unlock()
		return nil, status.Errorf(codes.NotFound, "container %q not found", req.ContainerId)
	}
	if c.state == runtimeapi.ContainerState_CONTAINER_EXITED {
		f.mu.Unlock()
		return &runtimeapi.StopContainerResponse{}, nil
	}
	if c.proc == nil {
		f.exit(c, 0, "Completed", "")
		f.mu.Unlock()
		return &runtimeapi.StopContainerResponse{}, nil
	}
	proc, done := c.proc, c.done
	f.mu.Unlock()
	if req.Timeout > 0 {
		_ = proc.Signal(syscall.SIGTERM)
		select {
		case <-done:
			return &runtimeapi.StopContainerResponse{}, nil
		case <-time.After(time.Duration(req.Timeout) * time.Second):
		}
	}
	_ = proc.Kill()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		return nil, status.Errorf(codes.DeadlineExceeded, "container %q did not exit 10s after SIGKILL", c.id)
	}
	return &runtimeapi.StopContainerResponse{}, nil
}

func (f *fakeRuntime) RemoveContainer(_ context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.containers[req.ContainerId]; ok {
		if c.proc != nil && c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			_ = c.proc.Kill()
		}
		if c.logPath != "" {
			_ = os.Remove(c.logPath)
		}
		delete(f.containers, req.ContainerId)
	}
	return &runtimeapi.RemoveContainerResponse{}, nil
}

func (f *fakeRuntime) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	flt := req.GetFilter()
	resp := &runtimeapi.ListContainersResponse{}
	for _, c := range f.containers {
		if flt != nil {
			if flt.Id != "" && flt.Id != c.id {
				continue
			}
			if flt.PodSandboxId != "" && flt.PodSandboxId != c.sandboxID {
				continue
			}
			if flt.State != nil && flt.State.State != c.state {
				continue
			}
			if !labelsMatch(flt.LabelSelector, c.config.GetLabels()) {
				continue
			}
		}
		resp.Containers = append(resp.Containers, &runtimeapi.Container{
			Id: c.id, PodSandboxId: c.sandboxID, Metadata: c.config.GetMetadata(),
			Image:    &runtimeapi.ImageSpec{Image: c.image, UserSpecifiedImage: c.config.GetImage().GetUserSpecifiedImage()},
			ImageRef: c.imageRef, ImageId: c.imageID, State: c.state, CreatedAt: c.createdAt,
			Labels: c.config.GetLabels(), Annotations: c.config.GetAnnotations(),
		})
	}
	sort.Slice(resp.Containers, func(i, j int) bool { return resp.Containers[i].CreatedAt < resp.Containers[j].CreatedAt })
	return resp, nil
}

func (f *fakeRuntime) containerStatus(c *container) *runtimeapi.ContainerStatus {
	st := &runtimeapi.ContainerStatus{
		Id: c.id, Metadata: c.config.GetMetadata(), State: c.state,
		CreatedAt: c.createdAt, StartedAt: c.startedAt, FinishedAt: c.finishedAt, ExitCode: c.exitCode,
		Image:    &runtimeapi.ImageSpec{Image: c.image, UserSpecifiedImage: c.config.GetImage().GetUserSpecifiedImage()},
		ImageRef: c.imageRef, ImageId: c.imageID,
		Reason: c.reason, Message: c.message,
		Labels: c.config.GetLabels(), Annotations: c.config.GetAnnotations(),
		Mounts: c.config.GetMounts(), LogPath: c.logPath,
	}
	if c.resources != nil {
		st.Resources = &runtimeapi.ContainerResources{Linux: cloneResources(c.resources)}
	}
	return st
}

func (f *fakeRuntime) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[req.ContainerId]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "container %q not found", req.ContainerId)
	}
	return &runtimeapi.ContainerStatusResponse{Status: f.containerStatus(c)}, nil
}

func (f *fakeRuntime) UpdateContainerResources(_ context.Context, req *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[req.ContainerId]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "container %q not found", req.ContainerId)
	}
	if req.Linux != nil {
		if c.resources == nil {
			c.resources = &runtimeapi.LinuxContainerResources{}
		}
		// Like runc, only the fields the request sets are written.
		c.resources = mergeResources(c.resources, req.Linux)
	}
	return &runtimeapi.UpdateContainerResourcesResponse{}, nil
}

func (f *fakeRuntime) UpdatePodSandboxResources(_ context.Context, _ *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	return &runtimeapi.UpdatePodSandboxResourcesResponse{}, nil
}

func (f *fakeRuntime) ReopenContainerLog(_ context.Context, _ *runtimeapi.ReopenContainerLogRequest) (*runtimeapi.ReopenContainerLogResponse, error) {
	return &runtimeapi.ReopenContainerLogResponse{}, nil
}

func (f *fakeRuntime) ContainerStats(_ context.Context, req *runtimeapi.ContainerStatsRequest) (*runtimeapi.ContainerStatsResponse, error) {
	return &runtimeapi.ContainerStatsResponse{}, nil
}

func (f *fakeRuntime) ListContainerStats(_ context.Context, _ *runtimeapi.ListContainerStatsRequest) (*runtimeapi.ListContainerStatsResponse, error) {
	return &runtimeapi.ListContainerStatsResponse{}, nil
}

func (f *fakeRuntime) PodSandboxStats(_ context.Context, _ *runtimeapi.PodSandboxStatsRequest) (*runtimeapi.PodSandboxStatsResponse, error) {
	return &runtimeapi.PodSandboxStatsResponse{}, nil
}

func (f *fakeRuntime) ListPodSandboxStats(_ context.Context, _ *runtimeapi.ListPodSandboxStatsRequest) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	return &runtimeapi.ListPodSandboxStatsResponse{}, nil
}

func (f *fakeRuntime) ListMetricDescriptors(_ context.Context, _ *runtimeapi.ListMetricDescriptorsRequest) (*runtimeapi.ListMetricDescriptorsResponse, error) {
	return &runtimeapi.ListMetricDescriptorsResponse{}, nil
}

func (f *fakeRuntime) ListPodSandboxMetrics(_ context.Context, _ *runtimeapi.ListPodSandboxMetricsRequest) (*runtimeapi.ListPodSandboxMetricsResponse, error) {
	return &runtimeapi.ListPodSandboxMetricsResponse{}, nil
}

// The CRI messages' copies: protoClone and protoMerge are the proto package of the release's cri-api
// (gogo-protobuf before 1.34, see compat_before134.go).

func cloneNamespaceOption(o *runtimeapi.NamespaceOption) *runtimeapi.NamespaceOption {
	return protoClone(o).(*runtimeapi.NamespaceOption)
}

func cloneResources(r *runtimeapi.LinuxContainerResources) *runtimeapi.LinuxContainerResources {
	return protoClone(r).(*runtimeapi.LinuxContainerResources)
}

// mergeResources returns a copy of r with the fields that update sets written over it.
func mergeResources(r, update *runtimeapi.LinuxContainerResources) *runtimeapi.LinuxContainerResources {
	merged := cloneResources(r)
	protoMerge(merged, update)
	return merged
}

// ---- image service ----

func (f *fakeRuntime) toAPIImage(i *image) *runtimeapi.Image {
	tags := []string{}
	if !strings.Contains(i.name, "@") {
		tags = append(tags, i.name)
	}
	return apiImage(&runtimeapi.Image{
		Id: i.id, RepoTags: tags, RepoDigests: []string{i.repoDigest},
		Spec: &runtimeapi.ImageSpec{Image: i.name},
	}, 4<<20)
}

func (f *fakeRuntime) ListImages(_ context.Context, _ *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &runtimeapi.ListImagesResponse{}
	for _, i := range f.images {
		resp.Images = append(resp.Images, f.toAPIImage(i))
	}
	return resp, nil
}

func (f *fakeRuntime) ImageStatus(_ context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ref := req.GetImage().GetImage()
	if i, ok := f.images[normaliseImage(ref)]; ok {
		return &runtimeapi.ImageStatusResponse{Image: f.toAPIImage(i)}, nil
	}
	for _, i := range f.images {
		if i.id == ref {
			return &runtimeapi.ImageStatusResponse{Image: f.toAPIImage(i)}, nil
		}
	}
	return &runtimeapi.ImageStatusResponse{}, nil
}

func (f *fakeRuntime) PullImage(_ context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	ref := req.GetImage().GetImage()
	b := app.Parse(app.TagOf(ref))
	if b.Pull > 0 {
		time.Sleep(b.Pull)
	}
	if b.PullFail {
		return nil, status.Errorf(codes.NotFound,
			"failed to pull and unpack image %q: %s: not found (local cluster fault injection: tag ends in -pullfail)",
			normaliseImage(ref), normaliseImage(ref))
	}
	i := imageFor(ref)
	f.mu.Lock()
	f.images[i.name] = i
	f.mu.Unlock()
	return &runtimeapi.PullImageResponse{ImageRef: i.id}, nil
}

func (f *fakeRuntime) RemoveImage(_ context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ref := req.GetImage().GetImage()
	for k, i := range f.images {
		if k == normaliseImage(ref) || i.id == ref {
			delete(f.images, k)
		}
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}

func (f *fakeRuntime) ImageFsInfo(_ context.Context, _ *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	f.mu.Lock()
	n := uint64(len(f.images))
	f.mu.Unlock()
	usage := &runtimeapi.FilesystemUsage{
		Timestamp:  now(),
		FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: f.rootDir},
		UsedBytes:  &runtimeapi.UInt64Value{Value: n * (4 << 20)},
		InodesUsed: &runtimeapi.UInt64Value{Value: n * 16},
	}
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{usage}}, nil
}
