// Package commonlabels holds the labels every Keelson controller puts on what it creates, so that the three
// controllers and the DaemonSet webhook (which checks a selector against the labels its controller will write)
// name them once.
package commonlabels

const (
	// ManagedBy is the well-known label naming the tool that manages an object.
	ManagedBy = "app.kubernetes.io/managed-by"
	// PartOf is the well-known label naming the application an object belongs to.
	PartOf = "app.kubernetes.io/part-of"
	// Keelson is the value of both labels on what a Keelson controller creates.
	Keelson = "keelson"
)

// Set returns a new map holding both labels with their value, for a caller to add its own labels to.
func Set() map[string]string {
	return map[string]string{ManagedBy: Keelson, PartOf: Keelson}
}
