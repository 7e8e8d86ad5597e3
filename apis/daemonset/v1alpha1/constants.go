package v1alpha1

// Well-known names of a DaemonSet: the label on what its controller creates, the annotation on a failed revision,
// and the container its image shorthand makes.
const (
	// NameLabel names the owning DaemonSet; the controller's cache holds only pods and revisions that carry it.
	NameLabel = "daemonset.keelson.dev/name"
	// RolloutFailureAnnotation is on the ControllerRevision whose rollout a failure policy stopped: the failure, as
	// status.rolloutFailure holds it (JSON). The revision keeps it while the DaemonSet's template is that revision's,
	// so a status lost (a restore without status, an orphan delete and a new DaemonSet) does not roll the failed
	// revision out again.
	RolloutFailureAnnotation = "daemonset.keelson.dev/rollout-failure"
	// DefaultContainerName is the container the image shorthand creates.
	DefaultContainerName = "app"
)
