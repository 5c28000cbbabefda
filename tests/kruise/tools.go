//go:build tools

// Package tools pins the OpenKruise commands hack/kruise.sh builds: `go build` of a main package of a
// dependency needs the dependency in go.mod, and this file keeps it there for `go mod tidy`.
package tools

import (
	_ "github.com/openkruise/kruise"
	_ "github.com/openkruise/kruise/cmd/daemon"
)
