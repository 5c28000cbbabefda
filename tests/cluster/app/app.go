package app

// The simulated application. The runtime starts one per running container, as PID 1 of
// its own PID namespace and inside the pod's network namespace. It serves HTTP on the
// ports its image serves (the container's declared ports, or -portN) at the pod IP and
// answers every path with 200 and one line naming pod, container and image, except the
// readiness paths (/ready, /readyz) while it is not ready (the first N seconds of -readyN,
// and once SIGTERM started a drain) and the health paths of a -nohealth image (404).
// Every request and every signal is written to the container log (CRI log format).

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// CrashAfter is how long a -crash app runs before it exits with code 1.
const CrashAfter = 2 * time.Second

// Body is the answer to every request: the traffic client reads pod and image from it.
func Body(pod, container, image string) string {
	return fmt.Sprintf("pod=%s container=%s image=%s\n", pod, container, image)
}

// criLog writes lines in the CRI log format the kubelet reads ("<time> stdout F <line>").
type criLog struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *criLog) printf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "%s stdout F %s\n", time.Now().UTC().Format(time.RFC3339Nano), strings.TrimRight(line, "\n"))
}

type server struct {
	pod, container, image string
	behaviour             Behaviour
	started               time.Time
	draining              atomic.Bool
	log                   *criLog
}

func (s *server) ready() bool {
	return !s.draining.Load() && time.Since(s.started) >= s.behaviour.Ready
}

// HealthPaths are the paths a health check of the app uses; /ready and /readyz are also its
// readiness paths (503 while not ready). An image tagged -nohealth answers 404 on all of them, as
// a release that moved its health endpoint does.
var HealthPaths = []string{"/ready", "/readyz", "/healthz", "/livez", "/health"}

// answer is the status code and body for a request to path.
func (s *server) answer(path string) (int, string) {
	if slices.Contains(HealthPaths, path) {
		if s.behaviour.NoHealth {
			return http.StatusNotFound, "not found (image tag has -nohealth)\n"
		}
		if (path == "/ready" || path == "/readyz") && !s.ready() {
			return http.StatusServiceUnavailable, "not ready\n"
		}
	}
	return http.StatusOK, Body(s.pod, s.container, s.image)
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	code, body := s.answer(r.URL.Path)
	s.log.printf("%s %s from %s: %d", r.Method, r.URL.Path, r.RemoteAddr, code)
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(code)
	_, _ = io.WriteString(w, body)
}

// Main runs the app; it returns only on bad flags (the app otherwise exits the process).
func Main(args []string) int {
	// Sockets belong to the network namespace of the thread that creates them: stay on this one.
	runtime.LockOSThread()
	debug.SetGCPercent(50)
	fs := flag.NewFlagSet("app", flag.ContinueOnError)
	pod := fs.String("pod", "", "namespace/name of the pod")
	container := fs.String("container", "", "container name")
	image := fs.String("image", "", "image reference (its tag selects the behaviour)")
	listen := fs.String("listen", "", "comma-separated IP:PORT addresses to serve HTTP on")
	logPath := fs.String("log", "", "container log file (CRI format); empty: stdout")
	netns := fs.String("netns", "", "network namespace file to enter before listening")
	watchFD := fs.Int("watch-fd", -1, "exit when this file descriptor reaches EOF (the runtime died)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var out io.Writer = os.Stdout
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintf(os.Stderr, "app: -log: %v\n", err)
			return 1
		}
		out = f
	}
	s := &server{pod: *pod, container: *container, image: *image, behaviour: Parse(TagOf(*image)),
		started: time.Now(), log: &criLog{w: out}}
	if *netns != "" {
		if err := enter(*netns); err != nil {
			s.log.printf("cannot enter network namespace %s: %v", *netns, err)
			return 1
		}
	}
	// Signals first, so that a SIGTERM arriving during start-up is seen.
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	var listeners []net.Listener
	for _, a := range strings.Split(*listen, ",") {
		if a == "" {
			continue
		}
		l, err := net.Listen("tcp", a)
		if err != nil {
			// A real server would crash; this one reports and serves its other ports.
			s.log.printf("listen %s: %v", a, err)
			continue
		}
		listeners = append(listeners, l)
	}
	addrs := []string{}
	for _, l := range listeners {
		addrs = append(addrs, l.Addr().String())
		hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 60 * time.Second}
		go func() { _ = hs.Serve(l) }()
	}
	s.log.printf("started: pod %s container %s image %s pid %d serving %s (ready after %s, drain %s, ignoreterm %v, nohealth %v)",
		s.pod, s.container, s.image, os.Getpid(), strings.Join(addrs, ","), s.behaviour.Ready, s.behaviour.Drain, s.behaviour.IgnoreTerm,
		s.behaviour.NoHealth)
	if *watchFD >= 0 {
		go func() {
			f := os.NewFile(uintptr(*watchFD), "runtime")
			_, _ = io.Copy(io.Discard, f)
			s.log.printf("the runtime is gone: exiting")
			os.Exit(137)
		}()
	}
	if s.behaviour.Crash {
		time.AfterFunc(CrashAfter, func() {
			s.log.printf("local cluster fault injection: image tag has -crash: exiting with code 1")
			os.Exit(1)
		})
	}
	for sg := range sig {
		name := unix.SignalName(sg.(syscall.Signal))
		if sg != syscall.SIGTERM && sg != syscall.SIGINT {
			s.log.printf("signal %s received: ignored", name)
			continue
		}
		if s.behaviour.IgnoreTerm {
			s.log.printf("signal %s received: ignored (image tag has -ignoreterm)", name)
			continue
		}
		if s.draining.Swap(true) {
			s.log.printf("signal %s received: already draining", name)
			continue
		}
		s.log.printf("signal %s received: draining for %s, then exiting", name, s.behaviour.Drain)
		time.AfterFunc(s.behaviour.Drain, func() {
			for _, l := range listeners {
				_ = l.Close()
			}
			s.log.printf("exiting with code 0")
			os.Exit(0)
		})
	}
	return 0
}

// enter moves the calling (locked) thread into the network namespace at path.
func enter(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Setns(fd, unix.CLONE_NEWNET)
}
