package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// hostProcessArgs returns the command lines of the host processes whose executable's base name is name: the
// local cluster's control plane runs as host processes, so their flags say how the measured cluster is set up
// (rather than how a configuration file meant it to be).
func hostProcessArgs(name string) ([][]string, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out [][]string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		args := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
		if filepath.Base(args[0]) == name {
			out = append(out, args)
		}
	}
	return out, nil
}

// FlagValue returns the value of --name in args (as --name=value or --name value; a bare --name is "true"),
// and whether it was given. A flag given twice has its last value, and nothing after a "--" is a flag.
func FlagValue(args []string, name string) (string, bool) {
	value, found := "", false
	for i, a := range args {
		switch {
		case a == "--":
			return value, found
		case a == "--"+name:
			value, found = "true", true
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				value = args[i+1]
			}
		case strings.HasPrefix(a, "--"+name+"="):
			value, found = strings.TrimPrefix(a, "--"+name+"="), true
		}
	}
	return value, found
}

// clusterSetup is what the harness read from the cluster's own processes, for the method section.
type clusterSetup struct {
	// AuditMode is the apiserver's --audit-log-mode (its default, blocking, when the flag is absent).
	AuditMode string `json:"auditMode"`
	// BuiltinLeaderElection is kube-controller-manager's --leader-elect (its default, true, when absent).
	BuiltinLeaderElection bool `json:"builtinLeaderElection"`
	// LeasesAudited is false when the audit policy drops Lease writes (leader election, node heartbeats).
	LeasesAudited bool `json:"leasesAudited"`
	// NodeMonitorGracePeriod is kube-controller-manager's --node-monitor-grace-period (its default, 50s, when
	// absent), as Go writes a duration: how long a node's lease may go unrenewed before the node is taken for
	// unreachable.
	NodeMonitorGracePeriod string `json:"nodeMonitorGracePeriod"`
}

// readClusterSetup reads the apiserver's audit mode and kube-controller-manager's leader election and node grace
// period from their command lines; a process that is not found fails the run, since the doc would otherwise state a guess.
func readClusterSetup() (clusterSetup, error) {
	var s clusterSetup
	one := func(name string) ([]string, error) {
		all, err := hostProcessArgs(name)
		if err != nil {
			return nil, err
		}
		if len(all) != 1 {
			return nil, fmt.Errorf("%d %s processes on this host, want 1: the benchmarks run on the local cluster", len(all), name)
		}
		return all[0], nil
	}
	api, err := one("kube-apiserver")
	if err != nil {
		return s, err
	}
	kcm, err := one("kube-controller-manager")
	if err != nil {
		return s, err
	}
	s.AuditMode = auditMode(api)
	if path, ok := FlagValue(api, "audit-policy-file"); ok {
		b, err := os.ReadFile(path)
		if err != nil {
			return s, fmt.Errorf("the apiserver's audit policy: %w", err)
		}
		if s.LeasesAudited, err = policyAuditsLeases(b); err != nil {
			return s, err
		}
	}
	le, ok := FlagValue(kcm, "leader-elect")
	s.BuiltinLeaderElection = !ok || le == "true"
	s.NodeMonitorGracePeriod = nodeMonitorGracePeriod(kcm)
	return s, nil
}

// defaultNodeMonitorGracePeriod is kube-controller-manager's own --node-monitor-grace-period.
const defaultNodeMonitorGracePeriod = 50 * time.Second

// nodeMonitorGracePeriod is the node grace period from kube-controller-manager's flags, its default when absent.
func nodeMonitorGracePeriod(args []string) string {
	if v, ok := FlagValue(args, "node-monitor-grace-period"); ok {
		return v
	}
	return defaultNodeMonitorGracePeriod.String()
}

// auditMode is the log backend's mode from the apiserver's flags; blocking is the apiserver's default.
func auditMode(args []string) string {
	if v, ok := FlagValue(args, "audit-log-mode"); ok {
		return v
	}
	return "blocking"
}

// auditCanDrop says whether the audit log backend mode may drop events under load: batch mode buffers events
// and drops those that do not fit, the blocking modes hold the request until the event is written.
func auditCanDrop(mode string) bool { return mode != "blocking" && mode != "blocking-strict" }

// auditPolicy is the part of an audit.k8s.io/v1 Policy that says whether Lease writes are logged.
type auditPolicy struct {
	Rules []struct {
		Level     string   `json:"level"`
		Verbs     []string `json:"verbs"`
		Resources []struct {
			Group     string   `json:"group"`
			Resources []string `json:"resources"`
		} `json:"resources"`
	} `json:"rules"`
}

// policyAuditsLeases says whether the policy logs Lease writes: its first rule that matches them (rules match in
// order) has a level other than None. A rule with no resources matches every resource; with verbs, only writes
// among them.
func policyAuditsLeases(b []byte) (bool, error) {
	var p auditPolicy
	if err := yaml.Unmarshal(b, &p); err != nil {
		return false, fmt.Errorf("the audit policy: %w", err)
	}
	for _, r := range p.Rules {
		matches := len(r.Resources) == 0
		for _, gr := range r.Resources {
			if gr.Group != "coordination.k8s.io" {
				continue
			}
			for _, res := range gr.Resources {
				matches = matches || res == "leases" || res == "*"
			}
			matches = matches || len(gr.Resources) == 0
		}
		if matches && (len(r.Verbs) == 0 || slices.Contains(r.Verbs, "update")) {
			return r.Level != "None", nil
		}
	}
	return false, nil
}
