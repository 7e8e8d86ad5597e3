package main

// binaryNames are Keelson's controllers, as their binaries, pods and service accounts are named.
var binaryNames = []string{"daemonset-controller", "workload-sizer", "pipeline-controller"}

// Who writes: kube-controller-manager runs with per-controller service accounts, Keelson with its chart's.
const builtinDaemonSetUser = "system:serviceaccount:kube-system:daemon-set-controller"

// keelsonUser is the service account of one of the chart's controllers.
func keelsonUser(releaseNS, release, binary string) string {
	return "system:serviceaccount:" + releaseNS + ":" + release + "-" + binary
}
