package main

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// A simulated node is taken for unreachable only well after kwok should have renewed its lease: at 10,000 nodes
// on two cores kwok renews late, and the default 50 s grace took a thousand nodes NotReady in a benchmark trial.
func TestSimulatedNodesOutliveLateLeaseRenewals(t *testing.T) {
	c := testCluster(t)
	procs := c.procs()
	grace, err := time.ParseDuration(flagValue(t, procs["kube-controller-manager"].Args, "--node-monitor-grace-period"))
	if err != nil {
		t.Fatal(err)
	}
	lease, err := strconv.Atoi(flagValue(t, procs["kwok"].Args, "--node-lease-duration-seconds"))
	if err != nil {
		t.Fatal(err)
	}
	if leaseDuration := time.Duration(lease) * time.Second; grace < 3*leaseDuration {
		t.Errorf("node-monitor-grace-period %s, want at least three lease durations (%s)", grace, 3*leaseDuration)
	}
}

// testCluster is a cluster laid out in a temporary directory, on a documentation address (192.0.2.1) that no
// test can reach, logging to the test.
func testCluster(t *testing.T) *Cluster {
	t.Helper()
	return &Cluster{L: Layout{Dir: t.TempDir()}, S: DefaultSettings("192.0.2.1"), Logf: t.Logf}
}

// flagValue is the value of --name=value in args; the test fails when it is absent.
func flagValue(t *testing.T, args []string, name string) string {
	t.Helper()
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	t.Fatalf("no %s in %q", name, args)
	return ""
}
