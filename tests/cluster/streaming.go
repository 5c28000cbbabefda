package main

// CRI streaming: Exec and PortForward hand the kubelet a URL on this node's streaming
// server (127.0.0.1, a free port); the kubelet proxies the API server's stream there.
// Exec runs the command inside the container's PID and network namespaces (no TTY:
// a TTY request gets stdout and stderr merged, without a terminal). PortForward
// connects to the pod IP. Attach is not supported (the app writes to its log file).
// (The streaming server's package moved in 1.36: see compat_*136.go.)

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	utilexec "k8s.io/utils/exec"
)

type streamRuntime struct{ f *fakeRuntime }

// startStreaming serves the streaming endpoints on 127.0.0.1 (the kubelet runs on this host).
func (f *fakeRuntime) startStreaming() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("streaming server: %w", err)
	}
	cfg := defaultStreamConfig
	cfg.Addr = l.Addr().String()
	cfg.BaseURL = &url.URL{Scheme: "http", Host: cfg.Addr}
	cfg.StreamIdleTimeout = 30 * time.Minute
	srv, err := newStreamServer(cfg, streamRuntime{f})
	if err != nil {
		return err
	}
	f.streamer = srv
	go func() { _ = (&http.Server{Handler: srv, ReadHeaderTimeout: 30 * time.Second}).Serve(l) }()
	return nil
}

func (s streamRuntime) Exec(ctx context.Context, id string, cmdline []string, in io.Reader, out, errw io.WriteCloser, tty bool, _ <-chan terminalSize) error {
	cmd, err := s.f.execCommand(ctx, id, cmdline)
	if err != nil {
		return err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, out, errw
	if tty || errw == nil {
		cmd.Stderr = out
	}
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code := ee.ExitCode()
		if code < 0 {
			code = 137
		}
		return utilexec.CodeExitError{Err: err, Code: code}
	}
	return err
}

func (s streamRuntime) Attach(_ context.Context, id string, _ io.Reader, _, _ io.WriteCloser, _ bool, _ <-chan terminalSize) error {
	return fmt.Errorf("attach to container %s: not supported by the local cluster's runtime (use logs)", id)
}

func (s streamRuntime) PortForward(ctx context.Context, sandboxID string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	s.f.mu.Lock()
	sb, ok := s.f.sandboxes[sandboxID]
	ip := ""
	if ok {
		ip = sb.ip
	}
	s.f.mu.Unlock()
	if !ok {
		return fmt.Errorf("pod sandbox %q not found", sandboxID)
	}
	d := net.Dialer{Timeout: 5 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ip, strconv.Itoa(int(port))))
	if err != nil {
		return err
	}
	defer conn.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(conn, stream); done <- struct{}{} }()
	go func() { _, _ = io.Copy(stream, conn); done <- struct{}{} }()
	<-done
	return nil
}

func (f *fakeRuntime) Exec(_ context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	if f.streamer == nil {
		return nil, status.Error(codes.Unavailable, "streaming server not started")
	}
	return f.streamer.GetExec(req)
}

func (f *fakeRuntime) Attach(_ context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	if f.streamer == nil {
		return nil, status.Error(codes.Unavailable, "streaming server not started")
	}
	return f.streamer.GetAttach(req)
}

func (f *fakeRuntime) PortForward(_ context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	if f.streamer == nil {
		return nil, status.Error(codes.Unavailable, "streaming server not started")
	}
	return f.streamer.GetPortForward(req)
}
