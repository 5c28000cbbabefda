// Copyright (c) inplace.k8s contributors
// GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/kubernetes/pkg/volume/util/hostutil"
	"k8s.io/kubernetes/pkg/volume/util/subpath"
)

// subPath mounts on the test bed. A real kubelet bind-mounts a volumeMount's subPath (a file or a directory of the
// volume, symlinks resolved) into the container when the container starts, so the container keeps what the volume
// held at that moment: a configMap key's file never changes under a subPath mount, until the container starts
// again. Kubemark's wiring has no mounts (its fakes answer "not implemented", and such a container never starts).
// The test bed has no mount namespaces either: it copies the subPath's content, when the container starts, to a
// directory of the pod that stands for the bind mount, and the runtime's exec reads the container's path there
// (process.go, mountedPaths). The copy is taken again at each start of the container, as the bind mount is.

// snapshotSubpath is the kubelet's Subpather (k8s.io/kubernetes/pkg/volume/util/subpath.Interface).
type snapshotSubpath struct{}

var _ subpath.Interface = snapshotSubpath{}

// subpathDir is where the copies of a pod's volume live: as the kubelet's own volume-subpaths directory.
func subpathDir(podDir, volume string) string {
	return filepath.Join(podDir, "volume-subpaths", volume)
}

// PrepareSafeSubpath copies the subPath's content (within the volume: the path, symlinks resolved, may not leave
// it) and answers the copy's path, which the kubelet gives the runtime as the mount's host path.
func (snapshotSubpath) PrepareSafeSubpath(sp subpath.Subpath) (string, func(), error) {
	volume, err := filepath.EvalSymlinks(sp.VolumePath)
	if err != nil {
		return "", nil, err
	}
	source, err := filepath.EvalSymlinks(sp.Path)
	if err != nil {
		return "", nil, err
	}
	if source != volume && !strings.HasPrefix(source, volume+string(os.PathSeparator)) {
		return "", nil, fmt.Errorf("subPath %s leaves its volume %s", sp.Path, sp.VolumePath)
	}
	target := filepath.Join(subpathDir(sp.PodDir, sp.VolumeName), sp.ContainerName, strconv.Itoa(sp.VolumeMountIndex))
	if err := os.RemoveAll(target); err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return "", nil, err
	}
	return target, nil, copyTree(source, target)
}

// CleanSubPaths removes the copies of a pod's volume (the kubelet calls it when it tears the pod's volume down).
func (snapshotSubpath) CleanSubPaths(podDir string, volumeName string) error {
	return os.RemoveAll(subpathDir(podDir, volumeName))
}

// SafeMakeDir creates a missing subPath directory inside the volume, as the kubelet does before the first start.
func (snapshotSubpath) SafeMakeDir(subdir string, base string, perm os.FileMode) error {
	path := filepath.Join(base, subdir)
	if path != base && !strings.HasPrefix(path, base+string(os.PathSeparator)) {
		return fmt.Errorf("subPath %s leaves its volume %s", subdir, base)
	}
	return os.MkdirAll(path, perm)
}

// copyTree copies a file, or a directory and what it holds (symlinks resolved), from source to target.
func copyTree(source, target string) error {
	info, err := os.Stat(source)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return copyFile(source, target, info.Mode().Perm())
	}
	if err := os.MkdirAll(target, info.Mode().Perm()|0o700); err != nil {
		return err
	}
	entries, err := os.ReadDir(source)
	if err != nil {
		return err
	}
	for _, entry := range entries {
		if err := copyTree(filepath.Join(source, entry.Name()), filepath.Join(target, entry.Name())); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(source, target string, perm os.FileMode) error {
	in, err := os.Open(source)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// fileHostUtil is kubemark's fake host utilities, except that whether a path exists and its mode are read from the
// file system: the kubelet asks both before it prepares a subPath (the fake's "not implemented" fails the container).
type fileHostUtil struct {
	*hostutil.FakeHostUtil
}

func (fileHostUtil) PathExists(pathname string) (bool, error) {
	_, err := os.Stat(pathname)
	if os.IsNotExist(err) {
		return false, nil
	}
	return err == nil, err
}

func (fileHostUtil) GetMode(pathname string) (os.FileMode, error) {
	info, err := os.Stat(pathname)
	if err != nil {
		return 0, err
	}
	return info.Mode(), nil
}
