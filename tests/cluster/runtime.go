package main

// A fake CRI runtime served over a real unix socket. It keeps pods and containers in
// memory but behaves like a container runtime as far as the kubelet can tell:
// per-sandbox IPs, container IDs that change on every (re)creation, labels and
// annotations round-tripped (so the kubelet's container-hash logic works), resources
// echoed back after UpdateContainerResources (so in-place resize completes), image
// references normalised the way containerd reports them, and deterministic faults
// selected by the image tag:
//
//	<tag>-pullfail  PullImage fails (ErrImagePull, then ImagePullBackOff)
//	<tag>-crash     the container exits with code 1 two seconds after it starts
//	<tag>-slowN     StartContainer takes N seconds
//
// Stopping a container through the socket (crictl stop, or any CRI client) marks it
// exited; the kubelet then restarts it according to the pod's restartPolicy.

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const (
	crashDelay   = 2 * time.Second
	initDuration = 500 * time.Millisecond
)

var slowTag = regexp.MustCompile(`-slow([0-9]+)$`)

type sandbox struct {
	id        string
	config    *runtimeapi.PodSandboxConfig
	state     runtimeapi.PodSandboxState
	createdAt int64
	ip        string
	handler   string
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
	nodeIndex  int
	ipCounter  int
	rootDir    string
	sandboxes  map[string]*sandbox
	containers map[string]*container
	images     map[string]*image // by normalised reference
	server     *grpc.Server
	// podSpec, when set, finds a pod's spec so that plain init containers can complete.
	podSpec func(namespace, name string) *v1.PodSpec
}

func newFakeRuntime(nodeIndex int, rootDir string) *fakeRuntime {
	return &fakeRuntime{
		nodeIndex:  nodeIndex,
		rootDir:    rootDir,
		sandboxes:  map[string]*sandbox{},
		containers: map[string]*container{},
		images:     map[string]*image{},
	}
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

// tagOf returns the tag of a reference ("" for digest-only references).
func tagOf(ref string) string {
	if strings.Contains(ref, "@") {
		return ""
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[i+1:]
	}
	return ""
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

// allocateIP hands out 10.(100+node).x.y addresses; they only ever appear in the API.
func (f *fakeRuntime) allocateIP() string {
	f.ipCounter++
	c := f.ipCounter
	return fmt.Sprintf("10.%d.%d.%d", 100+f.nodeIndex, (c/254)%256, c%254+1)
}

func (f *fakeRuntime) RunPodSandbox(_ context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := &sandbox{
		id:        newID(),
		config:    req.GetConfig(),
		state:     runtimeapi.PodSandboxState_SANDBOX_READY,
		createdAt: now(),
		handler:   req.GetRuntimeHandler(),
	}
	if s.config.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE {
		s.ip = "127.0.0.1"
	} else {
		s.ip = f.allocateIP()
	}
	f.sandboxes[s.id] = s
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: s.id}, nil
}

func (f *fakeRuntime) StopPodSandbox(_ context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.sandboxes[req.PodSandboxId]; ok {
		s.state = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
		for _, c := range f.containers {
			if c.sandboxID == s.id && c.state != runtimeapi.ContainerState_CONTAINER_EXITED {
				f.exit(c, 137, "Error", "")
			}
		}
	}
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

func (f *fakeRuntime) RemovePodSandbox(_ context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.sandboxes, req.PodSandboxId)
	for id, c := range f.containers {
		if c.sandboxID == req.PodSandboxId {
			delete(f.containers, id)
		}
	}
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

func (f *fakeRuntime) sandboxStatus(s *sandbox) *runtimeapi.PodSandboxStatus {
	return &runtimeapi.PodSandboxStatus{
		Id:        s.id,
		Metadata:  s.config.GetMetadata(),
		State:     s.state,
		CreatedAt: s.createdAt,
		Network:   &runtimeapi.PodSandboxNetworkStatus{Ip: s.ip},
		Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{
			Options: proto.Clone(orEmptyNS(s.config.GetLinux().GetSecurityContext().GetNamespaceOptions())).(*runtimeapi.NamespaceOption),
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
	tag := tagOf(c.config.GetImage().GetUserSpecifiedImage())
	if tag == "" {
		tag = tagOf(c.image)
	}
	f.mu.Unlock()
	plainInit := !strings.HasSuffix(tag, "-crash") && f.isPlainInit(c)
	if m := slowTag.FindStringSubmatch(tag); m != nil {
		n, _ := strconv.Atoi(m[1])
		time.Sleep(time.Duration(n) * time.Second)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.state != runtimeapi.ContainerState_CONTAINER_CREATED {
		return nil, status.Errorf(codes.FailedPrecondition, "container %q is not in created state", c.id)
	}
	c.state = runtimeapi.ContainerState_CONTAINER_RUNNING
	c.startedAt = now()
	if plainInit {
		// A plain init container does its work and exits successfully.
		id := c.id
		time.AfterFunc(initDuration, func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			if cc, ok := f.containers[id]; ok && cc.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
				f.exit(cc, 0, "Completed", "")
			}
		})
	}
	if strings.HasSuffix(tag, "-crash") {
		id := c.id
		time.AfterFunc(crashDelay, func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			if cc, ok := f.containers[id]; ok && cc.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
				f.exit(cc, 1, "Error", "local cluster fault injection: image tag ends in -crash")
			}
		})
	}
	return &runtimeapi.StartContainerResponse{}, nil
}

// isPlainInit tells whether the container is an init container without restartPolicy
// Always (a sidecar keeps running). It may call the API server: do not hold f.mu.
func (f *fakeRuntime) isPlainInit(c *container) bool {
	if f.podSpec == nil {
		return false
	}
	l := c.config.GetLabels()
	spec := f.podSpec(l["io.kubernetes.pod.namespace"], l["io.kubernetes.pod.name"])
	if spec == nil {
		return false
	}
	for _, ic := range spec.InitContainers {
		if ic.Name == c.config.GetMetadata().GetName() {
			return ic.RestartPolicy == nil || *ic.RestartPolicy != v1.ContainerRestartPolicyAlways
		}
	}
	return false
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

func (f *fakeRuntime) StopContainer(_ context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[req.ContainerId]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "container %q not found", req.ContainerId)
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_EXITED {
		f.exit(c, 0, "Completed", "")
	}
	return &runtimeapi.StopContainerResponse{}, nil
}

func (f *fakeRuntime) RemoveContainer(_ context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.containers[req.ContainerId]; ok {
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
		st.Resources = &runtimeapi.ContainerResources{Linux: proto.Clone(c.resources).(*runtimeapi.LinuxContainerResources)}
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
		merged := proto.Clone(c.resources).(*runtimeapi.LinuxContainerResources)
		proto.Merge(merged, req.Linux)
		c.resources = merged
	}
	return &runtimeapi.UpdateContainerResourcesResponse{}, nil
}

func (f *fakeRuntime) UpdatePodSandboxResources(_ context.Context, _ *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	return &runtimeapi.UpdatePodSandboxResourcesResponse{}, nil
}

func (f *fakeRuntime) ReopenContainerLog(_ context.Context, _ *runtimeapi.ReopenContainerLogRequest) (*runtimeapi.ReopenContainerLogResponse, error) {
	return &runtimeapi.ReopenContainerLogResponse{}, nil
}

// ExecSync backs exec probes: the command succeeds unless its first word is "false".
func (f *fakeRuntime) ExecSync(_ context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	if len(req.Cmd) > 0 && req.Cmd[0] == "false" {
		return &runtimeapi.ExecSyncResponse{ExitCode: 1}, nil
	}
	return &runtimeapi.ExecSyncResponse{ExitCode: 0}, nil
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

// ---- image service ----

func (f *fakeRuntime) toAPIImage(i *image) *runtimeapi.Image {
	tags := []string{}
	if !strings.Contains(i.name, "@") {
		tags = append(tags, i.name)
	}
	return &runtimeapi.Image{
		Id: i.id, RepoTags: tags, RepoDigests: []string{i.repoDigest}, Size: 4 << 20,
		Spec: &runtimeapi.ImageSpec{Image: i.name},
	}
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
	if strings.HasSuffix(tagOf(ref), "-pullfail") {
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
