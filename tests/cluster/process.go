package main

// Container processes: the runtime starts the simulated app (package app) for each
// running container, as PID 1 of a new PID namespace, inside the pod's network
// namespace, and runs exec commands (ExecSync, streaming exec) inside both namespaces
// with nsenter(1).

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/inplace-k8s/localcluster/app"
)

// execOutputLimit bounds what ExecSync keeps of a command's output.
const execOutputLimit = 16 << 20

// specFacts is what the runtime needs from a container's spec in the pod.
type specFacts struct {
	plainInit bool  // an init container without restartPolicy Always: it runs to completion
	ports     []int // the container's declared TCP ports
}

// containerSpec finds the container's spec through the pod (CRI does not carry ports).
// It may call the API server: do not hold f.mu.
func (f *fakeRuntime) containerSpec(c *container) specFacts {
	if f.podSpec == nil {
		return specFacts{}
	}
	l := c.config.GetLabels()
	spec := f.podSpec(l["io.kubernetes.pod.namespace"], l["io.kubernetes.pod.name"])
	if spec == nil {
		return specFacts{}
	}
	name := c.config.GetMetadata().GetName()
	for i := range spec.InitContainers {
		if ic := &spec.InitContainers[i]; ic.Name == name {
			sidecar := ic.RestartPolicy != nil && *ic.RestartPolicy == v1.ContainerRestartPolicyAlways
			return specFacts{plainInit: !sidecar, ports: declaredPorts(ic)}
		}
	}
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return specFacts{ports: declaredPorts(&spec.Containers[i])}
		}
	}
	return specFacts{}
}

// declaredPorts: the container's TCP ports, which the app serves unless its image tag moves it
// (-portN, app.Behaviour.Ports). As on a real node, a probe or hook on another port finds nothing
// listening: the kubelet's prober reports the failure.
func declaredPorts(c *v1.Container) []int {
	out := []int{}
	for _, p := range c.Ports {
		if (p.Protocol == "" || p.Protocol == v1.ProtocolTCP) && !slices.Contains(out, int(p.ContainerPort)) {
			out = append(out, int(p.ContainerPort))
		}
	}
	sort.Ints(out)
	return out
}

// startApp starts the container's process; callers hold f.mu.
func (f *fakeRuntime) startApp(c *container, s *sandbox, img string, ports []int) error {
	l := c.config.GetLabels()
	listen := []string{}
	for _, p := range ports {
		listen = append(listen, net.JoinHostPort(s.ip, strconv.Itoa(p)))
	}
	args := append([]string{}, f.appBin[1:]...)
	args = append(args, "-pod", l["io.kubernetes.pod.namespace"]+"/"+l["io.kubernetes.pod.name"],
		"-container", c.config.GetMetadata().GetName(), "-image", img,
		"-listen", strings.Join(listen, ","), "-watch-fd", "3")
	if c.logPath != "" {
		args = append(args, "-log", c.logPath)
	}
	if s.netns != "" {
		args = append(args, "-netns", s.netns)
	}
	cmd := exec.Command(f.appBin[0], args...)
	cmd.ExtraFiles = []*os.File{f.watchR}
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.Dir = "/"
	// No Pdeathsig: it fires when the forking OS thread exits, not the node process. The app
	// watches fd 3 (the read end of a pipe only this process holds open for writing) instead.
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	if err := cmd.Start(); err != nil {
		return err
	}
	c.proc, c.done = cmd.Process, make(chan struct{})
	crash := app.Parse(app.TagOf(img)).Crash
	go func() {
		_ = cmd.Wait()
		code := int32(0)
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
			if ws.Signaled() {
				code = 128 + int32(ws.Signal())
			} else {
				code = int32(ws.ExitStatus())
			}
		}
		reason, msg := "Completed", ""
		if code != 0 {
			reason = "Error"
		}
		if crash && code == 1 {
			msg = "local cluster fault injection: image tag ends in -crash"
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			f.exit(c, code, reason, msg)
		}
		close(c.done)
	}()
	return nil
}

// execCommand prepares cmdline to run inside the container's PID and network namespaces.
func (f *fakeRuntime) execCommand(ctx context.Context, id string, cmdline []string) (*exec.Cmd, error) {
	if len(cmdline) == 0 {
		return nil, status.Error(codes.InvalidArgument, "exec: empty command")
	}
	f.mu.Lock()
	c, ok := f.containers[id]
	if !ok {
		f.mu.Unlock()
		return nil, status.Errorf(codes.NotFound, "container %q not found", id)
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING || c.proc == nil {
		f.mu.Unlock()
		return nil, status.Errorf(codes.FailedPrecondition, "container %q is not running", id)
	}
	pid := c.proc.Pid
	netns := ""
	if s := f.sandboxes[c.sandboxID]; s != nil {
		netns = s.netns
	}
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root"}
	for _, kv := range c.config.GetEnvs() {
		env = append(env, kv.Key+"="+string(kv.Value))
	}
	cmdline = mountedPaths(cmdline, c.config.GetMounts())
	f.mu.Unlock()
	args := []string{"-t", strconv.Itoa(pid), "-p"}
	if netns != "" {
		args = append(args, "--net="+netns)
	}
	args = append(append(args, "--"), cmdline...)
	cmd := exec.CommandContext(ctx, "nsenter", args...)
	cmd.Env, cmd.Dir = env, "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	return cmd, nil
}

type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := execOutputLimit - b.Len(); room < len(p) {
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

// ExecSync runs a command in the container (exec probes, exec hooks, crictl exec).
func (f *fakeRuntime) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	timeout := 10 * time.Minute
	if req.Timeout > 0 {
		timeout = time.Duration(req.Timeout) * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd, err := f.execCommand(ctx, req.ContainerId, req.Cmd)
	if err != nil {
		return nil, err
	}
	var stdout, stderr limitedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return nil, status.Errorf(codes.DeadlineExceeded, "command %q timed out after %s", strings.Join(req.Cmd, " "), timeout)
	}
	code := int32(0)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = int32(ee.ExitCode())
		if code < 0 {
			code = 128 + int32(ee.Sys().(syscall.WaitStatus).Signal())
		}
	} else if err != nil {
		return nil, status.Errorf(codes.Internal, "exec %q: %v", strings.Join(req.Cmd, " "), err)
	}
	return &runtimeapi.ExecSyncResponse{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: code}, nil
}

// mountedPaths stands in for the container's mount namespace, which the runtime does not make: an argument
// that is a mount's container path, or a path under it, becomes the same path under the mount's host path (what
// the kubelet projected there: a configMap, secret or projected volume's files, a subPath's file). So
// `cat /etc/app/mode` through exec reads the kubelet's projection of the volume mounted at /etc/app, with its
// real update delay. The longest container path wins (a mount inside another).
func mountedPaths(cmdline []string, mounts []*runtimeapi.Mount) []string {
	sorted := slices.Clone(mounts)
	sort.SliceStable(sorted, func(i, j int) bool {
		return len(sorted[i].GetContainerPath()) > len(sorted[j].GetContainerPath())
	})
	out := make([]string, len(cmdline))
	for i, arg := range cmdline {
		out[i] = arg
		for _, m := range sorted {
			from, to := strings.TrimRight(m.GetContainerPath(), "/"), m.GetHostPath()
			if from == "" || to == "" {
				continue
			}
			if arg == from || strings.HasPrefix(arg, from+"/") {
				out[i] = to + strings.TrimPrefix(arg, from)
				break
			}
		}
	}
	return out
}
