// Package apis is the root of Keelson's API module: the Go types of every Keelson custom resource, one package per
// group-version. It is a Go module of its own so that clients can depend on the types without pulling in the
// controllers, and it may import only k8s.io/api, k8s.io/apimachinery and sigs.k8s.io/controller-runtime/pkg/scheme
// (imports_test.go enforces that).
package apis
