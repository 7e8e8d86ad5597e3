package v1alpha1

// Well-known names of a WorkloadSizer: the label on what its controller creates, the container its image
// shorthand makes, and its finalizer.
const (
	// NameLabel names the owning sizer on every object it creates.
	NameLabel = "sizer.keelson.dev/name"
	// DefaultContainerName is the container the image shorthand creates.
	DefaultContainerName = "app"
	// Finalizer lets the sizer release the fields it owns on a target it did not create before the sizer goes.
	Finalizer = "sizer.keelson.dev/release"
	// FieldManager is the sizer's server-side apply field manager; the fields it writes to a workload it did not
	// create belong to FieldManager + "/" + the sizer's name (shortened with a hash past the apiserver's 128
	// characters).
	FieldManager = "keelson-workload-sizer"
)

// DefaultMemoryHeadroomPercent is the memory headroom of a runtime spec that sets none.
const DefaultMemoryHeadroomPercent = 10
