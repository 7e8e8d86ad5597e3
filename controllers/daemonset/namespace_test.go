package daemonset

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"

	"github.com/keelson-dev/keelson/controllers/internal/passerr"
)

// Once its namespace is being deleted, a DaemonSet's missing pods and revisions can no longer be created, and the
// namespace's deletion will remove the DaemonSet too. A pass that meets that refusal is no error: as an error it
// would be retried, refused and logged again and again until then (hundreds of error lines a minute), and the
// FailedCreate event it tells could not be written either.
func TestANamespaceBeingDeletedIsNoError(t *testing.T) {
	for _, tc := range []struct {
		name, resource string
		before         func(w *world)
	}{
		{"the revision", "controllerrevisions", func(*world) {}},
		{"a pod", "pods", func(w *world) {
			w.mustReconcile()
			w.settle()
			var p corev1.Pod
			p.Namespace, p.Name = worldNamespace, w.podOn("a")
			if err := w.live.Delete(w.ctx, &p); err != nil {
				t.Fatal(err)
			}
			w.settle()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, "a", "b")
			tc.before(w)
			recorder := events.NewFakeRecorder(100)
			w.r.Recorder = recorder
			w.createErr = passerr.NewNamespaceTerminating(tc.resource, worldNamespace)
			if _, err := w.reconcile(); err != nil {
				t.Fatalf("a pass in a namespace being deleted failed: %v", err)
			}
			if w.refusedCreates == 0 {
				t.Fatal("the pass tried no create: it proves nothing")
			}
			close(recorder.Events)
			for e := range recorder.Events {
				if strings.Contains(e, eventFailedCreate) {
					t.Errorf("a pass in a namespace being deleted told %q", e)
				}
			}
		})
	}
}
