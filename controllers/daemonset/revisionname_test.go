package daemonset

import (
	"bytes"
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// firstRevision is the revision a first pass records for the world's DaemonSet, as stored.
func firstRevision(t *testing.T) appsv1.ControllerRevision {
	t.Helper()
	w := newWorld(t, "a")
	w.mustReconcile()
	var list appsv1.ControllerRevisionList
	if err := w.live.List(w.ctx, &list, client.InNamespace(worldNamespace)); err != nil || len(list.Items) != 1 {
		t.Fatalf("first pass: %d revisions (%v), want 1", len(list.Items), err)
	}
	return list.Items[0]
}

// hideRevisions makes the world's cache hold no revision: one stored a moment ago that it has yet to see is neither
// listed nor found by name.
func hideRevisions(w *world) {
	w.r.Client = interceptor.NewClient(w.r.Client.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*appsv1.ControllerRevision); ok {
				return apierrors.NewNotFound(appsv1.Resource("controllerrevisions"), key.Name)
			}
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if err := c.List(ctx, list, opts...); err != nil {
				return err
			}
			if revs, ok := list.(*appsv1.ControllerRevisionList); ok {
				revs.Items = nil
			}
			return nil
		}})
}

// A revision name that is already taken when the pass creates its revision (the cache has yet to see it) is read
// live and compared, as apps/v1 does: the DaemonSet's own revision (a leader's write moments before it died) is
// used as it is, an orphan of its name is adopted, and a name holding another owner's revision or another template
// is a collision, which salts the next name. The pods follow the revision chosen.
func TestARevisionNameTakenIsReadLive(t *testing.T) {
	model := firstRevision(t)
	otherTemplate := bytes.Replace(model.Data.Raw, []byte("agent:v1"), []byte("agent:v9"), 1)
	if bytes.Equal(otherTemplate, model.Data.Raw) {
		t.Fatalf("the revision's data names no agent:v1: %s", model.Data.Raw)
	}
	for _, tc := range []struct {
		name       string
		mutate     func(*appsv1.ControllerRevision)
		collisions int32
	}{
		{"the DaemonSet's own", func(*appsv1.ControllerRevision) {}, 0},
		{"an orphan of the DaemonSet's name", func(r *appsv1.ControllerRevision) { r.OwnerReferences = nil }, 0},
		{"another DaemonSet's, of the same template", func(r *appsv1.ControllerRevision) { r.OwnerReferences[0].UID = "other-uid" }, 1},
		{"one of another template", func(r *appsv1.ControllerRevision) { r.Data.Raw = otherTemplate }, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, "a")
			rev := model.DeepCopy()
			rev.ResourceVersion, rev.UID = "", ""
			tc.mutate(rev)
			if err := w.live.Create(w.ctx, rev); err != nil {
				t.Fatal(err)
			}
			hideRevisions(w)
			w.mustReconcile()

			if got := ptr.Deref(w.ds().Status.CollisionCount, 0); got != tc.collisions {
				t.Errorf("collision count %d, want %d", got, tc.collisions)
			}
			pods := w.pods()
			if len(pods) != 1 {
				t.Fatalf("%d pods, want 1", len(pods))
			}
			sameRevision := pods[0].Labels[RevisionLabel] == model.Labels[RevisionLabel]
			if sameRevision != (tc.collisions == 0) {
				t.Errorf("the pod runs revision %s; the taken name's is %s, and it collided %d times",
					pods[0].Labels[RevisionLabel], model.Labels[RevisionLabel], tc.collisions)
			}
			var stored appsv1.ControllerRevision
			if err := w.live.Get(w.ctx, client.ObjectKeyFromObject(rev), &stored); err != nil {
				t.Fatal(err)
			}
			owner := metav1.GetControllerOf(&stored)
			if tc.collisions == 0 && (owner == nil || owner.UID != "ds-uid") {
				t.Errorf("the revision named %s is controlled by %v, want the DaemonSet", rev.Name, owner)
			}
			if tc.collisions > 0 && !bytes.Equal(stored.Data.Raw, rev.Data.Raw) {
				t.Errorf("the other revision's data changed")
			}
		})
	}
}
