package main

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// runEtcd runs an embedded etcd bound to 127.0.0.1 until SIGTERM/SIGINT.
func runEtcd(args []string) int {
	fs := flag.NewFlagSet("etcd", flag.ExitOnError)
	dataDir := fs.String("data-dir", "", "etcd data directory")
	clientPort := fs.Int("client-port", 2379, "client port on 127.0.0.1")
	peerPort := fs.Int("peer-port", 2380, "peer port on 127.0.0.1")
	_ = fs.Parse(args)
	if *dataDir == "" {
		fmt.Fprintln(os.Stderr, "etcd: --data-dir is required")
		return 2
	}
	cfg := embed.NewConfig()
	cfg.Dir = *dataDir
	cfg.Name = "local"
	cfg.UnsafeNoFsync = true
	cfg.LogLevel = "warn"
	client, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", *clientPort))
	peer, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", *peerPort))
	cfg.ListenClientUrls = []url.URL{*client}
	cfg.AdvertiseClientUrls = []url.URL{*client}
	cfg.ListenPeerUrls = []url.URL{*peer}
	cfg.AdvertisePeerUrls = []url.URL{*peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.QuotaBackendBytes = 4 << 30
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd: start: %v\n", err)
		return 1
	}
	select {
	case <-e.Server.ReadyNotify():
		fmt.Println("etcd ready on", client.String())
	case <-time.After(60 * time.Second):
		fmt.Fprintln(os.Stderr, "etcd: not ready after 60s")
		e.Close()
		return 1
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case s := <-sig:
		fmt.Println("etcd: stopping on", s)
	case err := <-e.Err():
		fmt.Fprintf(os.Stderr, "etcd: %v\n", err)
		e.Close()
		return 1
	}
	e.Close()
	return 0
}
