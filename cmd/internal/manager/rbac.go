package manager

// The cluster-wide permissions every Keelson binary needs, whatever it reconciles: events (get too: the event
// writer reads an event back, past the cache, to count up its series), and the token and access reviews that guard
// /metrics. `make manifests` folds them into each controller's role. The
// leader election Lease lives in the release namespace: the chart grants it with a Role, not cluster-wide.

// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=get;create;patch
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
