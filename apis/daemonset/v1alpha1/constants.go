package v1alpha1

// Well-known names of a DaemonSet: the label on what its controller creates, and the container its image
// shorthand makes.
const (
	// NameLabel names the owning DaemonSet; the controller's cache holds only pods and revisions that carry it.
	NameLabel = "daemonset.keelson.dev/name"
	// DefaultContainerName is the container the image shorthand creates.
	DefaultContainerName = "app"
)
