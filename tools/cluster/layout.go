package main

import (
	"path/filepath"
)

// Layout names every file and directory the local cluster owns. All of it lives under one directory (Dir, by
// default .cluster/ in the repository, ignored by git) so that teardown knows exactly what is ours.
type Layout struct {
	// Dir is the cluster's directory.
	Dir string
	// BinDir holds the pinned Kubernetes binaries and etcd (tools/install.sh kube).
	BinDir string
	// KwokBinary is the pinned kwok controller.
	KwokBinary string
	// KwokStages is the pinned kwok release's stages (tools/install.sh kwok): what kwok does to nodes and pods.
	KwokStages string
	// ImagesDir holds the OCI archives imported into the node's containerd on every start.
	ImagesDir string
}

// PKIDir holds the CA, certificates and per-component kubeconfigs. It survives teardown.
func (l Layout) PKIDir() string { return filepath.Join(l.Dir, "pki") }

// EtcDir holds the rendered config files.
func (l Layout) EtcDir() string { return filepath.Join(l.Dir, "etc") }

// LogsDir holds one log per process, the pods' logs and the audit log. It survives teardown.
func (l Layout) LogsDir() string { return filepath.Join(l.Dir, "logs") }

// PIDsDir holds one PID file per process.
func (l Layout) PIDsDir() string { return filepath.Join(l.Dir, "pids") }

// DataDir holds etcd's, containerd's, the kubelet's and the CNI's data.
func (l Layout) DataDir() string { return filepath.Join(l.Dir, "data") }

// RunDir holds runtime state: containerd's state directory and socket.
func (l Layout) RunDir() string { return filepath.Join(l.Dir, "run") }

// EtcdData is etcd's data directory.
func (l Layout) EtcdData() string { return filepath.Join(l.DataDir(), "etcd") }

// ContainerdRoot is containerd's root: images and snapshots.
func (l Layout) ContainerdRoot() string { return filepath.Join(l.DataDir(), "containerd") }

// ContainerdState is containerd's state directory.
func (l Layout) ContainerdState() string { return filepath.Join(l.RunDir(), "containerd") }

// KubeletRoot is the kubelet's --root-dir: pods' volumes live under it.
func (l Layout) KubeletRoot() string { return filepath.Join(l.DataDir(), "kubelet") }

// CNIData is the host-local IPAM's data directory.
func (l Layout) CNIData() string { return filepath.Join(l.DataDir(), "cni") }

// PodLogs is the kubelet's podLogsDir.
func (l Layout) PodLogs() string { return filepath.Join(l.LogsDir(), "pods") }

// Socket is the node's containerd socket (its own instance, apart from any other containerd on the host).
func (l Layout) Socket() string { return filepath.Join(l.ContainerdState(), "containerd.sock") }

// Kubeconfig is the cluster-admin kubeconfig users point kubectl at.
func (l Layout) Kubeconfig() string { return filepath.Join(l.Dir, "kubeconfig") }

// AuditLog is the apiserver's audit log (write requests only), read by the benchmarks.
func (l Layout) AuditLog() string { return filepath.Join(l.LogsDir(), "audit.log") }

// StateDirs are removed by teardown; pki/, etc/ and logs/ stay so that the kubeconfig keeps working across
// restarts and the last run's logs can be read.
func (l Layout) StateDirs() []string { return []string{l.DataDir(), l.RunDir(), l.PIDsDir()} }

// Bin returns the path of a pinned Kubernetes binary.
func (l Layout) Bin(name string) string { return filepath.Join(l.BinDir, name) }

// EtcFile is the path of a rendered config file.
func (l Layout) EtcFile(name string) string { return filepath.Join(l.EtcDir(), name) }
