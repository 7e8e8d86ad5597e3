package main

import (
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The rendered files parse, and carry the knobs without which a node fails on these hosts.
func TestRender(t *testing.T) {
	l := Layout{Dir: "/w/.cluster"}
	files, err := Render(DefaultSettings("192.0.2.2"), l)
	if err != nil {
		t.Fatal(err)
	}
	mustHave := map[string][]string{
		containerdConfig: {"restrict_oom_score_adj = true", `address = "/w/.cluster/run/containerd/containerd.sock"`,
			`conf_dir = "/w/.cluster/etc/cni"`, `sandbox_image = "registry.k8s.io/pause:3.10.2"`, "SystemdCgroup = false"},
		kubeletConfig:   {"failCgroupV1: false", "cgroupDriver: cgroupfs", "clusterDNS: [10.96.0.10]", "podLogsDir: /w/.cluster/logs/pods"},
		kubeProxyConfig: {"mode: iptables", "/w/.cluster/pki/kube-proxy.kubeconfig"},
		coreDNSManifest: {"clusterIP: 10.96.0.10", "image: localhost/keelson/coredns:local"},
		kwokConfig:      {"cidr: 10.128.0.0/12", "nodeLeaseParallelism: 16", "nodeLeaseDurationSeconds: 40"},
	}
	for name, wants := range mustHave {
		for _, w := range wants {
			if !strings.Contains(string(files[name]), w) {
				t.Errorf("%s lacks %q", name, w)
			}
		}
	}
	var cni struct {
		Plugins []struct {
			Type   string `json:"type"`
			Bridge string `json:"bridge"`
			IPAM   struct {
				DataDir string `json:"dataDir"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(files[cniConfig], &cni); err != nil {
		t.Fatalf("CNI config: %v", err)
	}
	var types []string
	for _, p := range cni.Plugins {
		types = append(types, p.Type)
	}
	if strings.Join(types, ",") != "bridge,firewall,portmap,loopback" {
		t.Errorf("CNI chain %v: the firewall plugin must follow the bridge (FORWARD may default to DROP)", types)
	}
	if cni.Plugins[0].Bridge != "keelson0" || cni.Plugins[0].IPAM.DataDir != "/w/.cluster/data/cni" {
		t.Errorf("bridge %q, IPAM data %q: both must be ours, to clean up", cni.Plugins[0].Bridge, cni.Plugins[0].IPAM.DataDir)
	}
	var stage struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	var stages []string
	for _, doc := range strings.Split(string(files[kwokStages]), "\n---\n") {
		if err := yaml.Unmarshal([]byte(doc), &stage); err != nil || stage.Kind != "Stage" {
			t.Errorf("kwok stage %q: %+v, %v", doc, stage, err)
		}
		stages = append(stages, stage.Metadata.Name)
	}
	if strings.Join(stages, ",") != "pod-in-place-restart,pod-ready-gates-open" {
		t.Errorf("kwok's own stages: %v", stages)
	}
	for _, name := range []string{kubeletConfig, kubeProxyConfig, auditPolicy, kwokConfig} {
		var v map[string]any
		if err := yaml.Unmarshal(files[name], &v); err != nil {
			t.Errorf("%s is not YAML: %v", name, err)
		}
	}
	for i, doc := range strings.Split(string(files[coreDNSManifest]), "\n---\n") {
		var v map[string]any
		if err := yaml.Unmarshal([]byte(doc), &v); err != nil || v["kind"] == nil {
			t.Errorf("CoreDNS manifest document %d: %v", i, err)
		}
	}
}
