package main

import (
	"bytes"
	_ "embed"
	"fmt"
	"text/template"
	"time"
)

// Settings are the cluster's addresses and names. Defaults (DefaultSettings) suit a single machine; every value
// lands in the files Render writes and in the flags of the processes.
type Settings struct {
	// NodeName names the real node (its kubernetes.io/hostname label).
	NodeName string
	// HostIP is the host's non-loopback address: the apiserver advertises it and the kubelet registers it.
	HostIP string
	// APIPort is the apiserver's secure port.
	APIPort int
	// ServiceCIDR is the ClusterIP range; the first address is the kubernetes Service.
	ServiceCIDR string
	// DNSIP is CoreDNS's ClusterIP, inside ServiceCIDR.
	DNSIP string
	// PodCIDR is the real node's pod range (the CNI bridge).
	PodCIDR string
	// FakePodCIDR is where kwok takes the IPs of pods on simulated nodes; large enough for the benchmarks.
	FakePodCIDR string
	// Bridge names the CNI bridge; teardown deletes it.
	Bridge string
	// SandboxImage is the pause image, built locally and imported.
	SandboxImage string
	// CoreDNSImage is the CoreDNS image, built locally and imported.
	CoreDNSImage string
}

// DefaultSettings returns the settings for hostIP.
func DefaultSettings(hostIP string) Settings {
	return Settings{
		NodeName:     "keelson-control-plane",
		HostIP:       hostIP,
		APIPort:      6443,
		ServiceCIDR:  "10.96.0.0/16",
		DNSIP:        "10.96.0.10",
		PodCIDR:      "10.244.0.0/24",
		FakePodCIDR:  "10.128.0.0/12",
		Bridge:       "keelson0",
		SandboxImage: "registry.k8s.io/pause:3.10.2",
		CoreDNSImage: "localhost/keelson/coredns:" + "local",
	}
}

// APIServer is the URL clients use.
func (s Settings) APIServer() string { return fmt.Sprintf("https://%s:%d", s.HostIP, s.APIPort) }

// nodeMonitorGracePeriod is how long after its last lease renewal kube-controller-manager takes a node for
// unreachable: three times kwok's lease duration (kwokLeaseSeconds), so that only a node whose lease nobody renews
// (kwok stopped, the kubelet stopped, a node kwok never took) goes unreachable on its own. kwok keeps renewing the
// lease of a node whose annotation was taken away, so a scenario that needs a node NotReady takes the annotation
// and writes the node's Ready condition itself.
const nodeMonitorGracePeriod = 3 * kwokLeaseSeconds * time.Second

// kwokLeaseSeconds is the duration of a simulated node's lease; kwok renews it every quarter of that.
const kwokLeaseSeconds = 40

// renderData is what the templates see.
type renderData struct {
	Settings
	L Layout
	// KwokLeaseSeconds is the simulated nodes' lease duration (kwokLeaseSeconds), the same in kwok's flags.
	KwokLeaseSeconds int
}

// Config files under etc/, by name.
const (
	containerdConfig = "containerd.toml"
	kubeletConfig    = "kubelet.yaml"
	kubeProxyConfig  = "kube-proxy.yaml"
	cniConfig        = "cni/10-keelson.conflist"
	auditPolicy      = "audit-policy.yaml"
	coreDNSManifest  = "coredns.yaml"
	kwokConfig       = "kwok.yaml"
	kwokStages       = "kwok-stages.yaml"
)

// inPlaceStage is kwok's stage that restarts a simulated pod's containers whose image changed in place. It is a
// kwok template, so it is written as it is, not rendered.
//
//go:embed kwok-in-place-stage.yaml
var inPlaceStage []byte

// templates holds every config file. The comments inside name the knobs without which a node fails on a host
// with cgroup v1, no CAP_SYS_RESOURCE and a FORWARD policy of DROP.
var templates = map[string]string{
	containerdConfig: `# The node's own containerd, apart from any other containerd on the host.
version = 2
root = "{{.L.ContainerdRoot}}"
state = "{{.L.ContainerdState}}"
[grpc]
  address = "{{.L.Socket}}"
[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "{{.SandboxImage}}"
    # Without CAP_SYS_RESOURCE runc cannot lower oom_score_adj below its own; every sandbox would fail.
    restrict_oom_score_adj = true
    enable_unprivileged_ports = true
    enable_unprivileged_icmp = true
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = false
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "/usr/lib/cni"
      conf_dir = "{{.L.EtcDir}}/cni"
`,
	kubeletConfig: `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# kubelet 1.35+ refuses cgroup v1 unless told otherwise; the host has no systemd cgroup manager.
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://{{.L.Socket}}
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: {{.L.PKIDir}}/ca.crt}
authorization: {mode: Webhook}
clusterDomain: cluster.local
clusterDNS: [{{.DNSIP}}]
resolvConf: /etc/resolv.conf
podLogsDir: {{.L.PodLogs}}
failSwapOn: false
podCIDR: {{.PodCIDR}}
maxPods: 110
readOnlyPort: 0
serializeImagePulls: false
# The images are imported, never pulled: never garbage-collect them, and never evict for a full-ish disk.
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
`,
	kubeProxyConfig: `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: {{.L.PKIDir}}/kube-proxy.kubeconfig}
clusterCIDR: {{.PodCIDR}}
conntrack: {maxPerCore: 0}
metricsBindAddress: 127.0.0.1:10249
`,
	// The firewall plugin accepts the pods' traffic in FORWARD, whose policy a Docker daemon sets to DROP.
	cniConfig: `{
  "cniVersion": "1.0.0",
  "name": "keelson",
  "plugins": [
    {"type": "bridge", "bridge": "{{.Bridge}}", "isGateway": true, "ipMasq": true, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": "{{.L.CNIData}}", "ranges": [[{"subnet": "{{.PodCIDR}}"}]],
              "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "firewall"},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
`,
	// Writes only, with who made them: what the benchmarks attribute per controller. Reads are not logged, nor
	// are Lease writes: leader election and node heartbeats renew them on a clock, whatever the controllers do.
	// Events are logged: they are writes a controller chooses to make.
	auditPolicy: `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  resources: [{group: coordination.k8s.io, resources: [leases]}]
- level: Metadata
  verbs: [create, update, patch, delete, deletecollection]
- level: None
`,
	// kwok's built-in stages: nodes Ready with heartbeats, pods Running and Ready, deleted pods removed.
	kwokConfig: `apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  cidr: {{.FakePodCIDR}}
  nodeIP: {{.HostIP}}
  nodeLeaseDurationSeconds: {{.KwokLeaseSeconds}}
  # A config file gets no defaults: zero workers would stop kwok at start.
  nodeLeaseParallelism: 16
  nodePlayStageParallelism: 16
  podPlayStageParallelism: 16
  podsOnNodeSyncParallelism: 8
`,
	coreDNSManifest: `apiVersion: v1
kind: ServiceAccount
metadata: {name: coredns, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:coredns"}
rules:
- {apiGroups: [""], resources: [endpoints, services, pods, namespaces], verbs: [list, watch]}
- {apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: [list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:coredns"}
subjects: [{kind: ServiceAccount, name: coredns, namespace: kube-system}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: coredns, namespace: kube-system}
data:
  Corefile: |
    .:53 {
        errors
        health :8080
        ready :8181
        kubernetes cluster.local in-addr.arpa ip6.arpa {
           pods insecure
           fallthrough in-addr.arpa ip6.arpa
        }
        forward . /etc/resolv.conf
        cache 30
        loop
        reload
    }
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: coredns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  replicas: 1
  selector: {matchLabels: {k8s-app: kube-dns}}
  template:
    metadata: {labels: {k8s-app: kube-dns}}
    spec:
      serviceAccountName: coredns
      dnsPolicy: Default
      priorityClassName: system-cluster-critical
      containers:
      - name: coredns
        image: {{.CoreDNSImage}}
        imagePullPolicy: Never
        args: ["-conf", "/etc/coredns/Corefile"]
        ports: [{containerPort: 53, name: dns, protocol: UDP}, {containerPort: 53, name: dns-tcp, protocol: TCP}]
        readinessProbe: {httpGet: {path: /ready, port: 8181}, periodSeconds: 2}
        livenessProbe: {httpGet: {path: /health, port: 8080}}
        securityContext: {capabilities: {add: [NET_BIND_SERVICE]}}
        volumeMounts: [{name: config, mountPath: /etc/coredns, readOnly: true}]
      volumes: [{name: config, configMap: {name: coredns}}]
---
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  clusterIP: {{.DNSIP}}
  selector: {k8s-app: kube-dns}
  ports:
  - {name: dns, port: 53, protocol: UDP}
  - {name: dns-tcp, port: 53, protocol: TCP}
`,
}

// Render returns every config file, by its path under etc/.
func Render(s Settings, l Layout) (map[string][]byte, error) {
	out := map[string][]byte{}
	for name, text := range templates {
		t, err := template.New(name).Option("missingkey=error").Parse(text)
		if err != nil {
			return nil, fmt.Errorf("template %s: %w", name, err)
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, renderData{Settings: s, L: l, KwokLeaseSeconds: kwokLeaseSeconds}); err != nil {
			return nil, fmt.Errorf("template %s: %w", name, err)
		}
		out[name] = buf.Bytes()
	}
	out[kwokStages] = inPlaceStage
	return out, nil
}
