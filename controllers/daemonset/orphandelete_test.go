//go:build integration

package daemonset_test

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// orphanAsTheGarbageCollectorDoes removes owner's reference from obj with the strategic merge patch
// kube-controller-manager's garbage collector sends for `kubectl delete --cascade=orphan`.
func orphanAsTheGarbageCollectorDoes(s *scenario, obj client.Object, owner types.UID) error {
	patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"$patch":"delete","uid":%q}],"uid":%q}}`, owner, obj.GetUID())
	return env.Client.Patch(s.ctx, obj, client.RawPatch(types.StrategicMergePatchType, []byte(patch)))
}

// revisionsOf lists the ControllerRevisions labelled for the DaemonSet name.
func revisionsOf(s *scenario, name string) []appsv1.ControllerRevision {
	var list appsv1.ControllerRevisionList
	s.g.Expect(env.Client.List(s.ctx, &list, client.InNamespace(s.ns),
		client.MatchingLabels{daemonsetv1alpha1.NameLabel: name})).To(Succeed())
	return list.Items
}

// `kubectl delete kds --cascade=orphan`, then the same DaemonSet applied again: the garbage collector can take the
// owner reference off every child (a revision's data must survive the patch unchanged, or the apiserver refuses it
// as a change of an immutable field and the orphan finalizer stays for good), and the new DaemonSet adopts the pods
// and the revision it left, creating no pod.
func TestAnOrphanDeleteCompletesAndTheRecreatedDaemonSetAdoptsEverything(t *testing.T) {
	s := newScenario(t)
	c := startController(t)
	s.node("a", nil)
	s.node("b", nil)
	s.kubelet("agent")
	old := s.daemonSet("agent", "agent:v1", func(ds *daemonsetv1alpha1.DaemonSet) {
		// Fields whose JSON a round trip would reorder, and characters it would escape.
		ds.Spec.Template.Annotations = map[string]string{"z": "<&>", "a": "1"}
		ds.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "B", Value: "x"}, {Name: "A", Value: "1e3"}}
	})
	s.g.Eventually(func() map[string]int { return s.podsPerNode("agent") }, timeout, poll).Should(Equal(map[string]int{
		s.label + "-a": 1, s.label + "-b": 1}))
	s.g.Eventually(func() int32 { return s.get("agent").Status.NumberReady }, timeout, poll).Should(BeEquivalentTo(2))
	podUIDs := map[types.UID]bool{}
	for _, p := range s.pods("agent") {
		podUIDs[p.UID] = true
	}
	revs := revisionsOf(s, "agent")
	s.g.Expect(revs).To(HaveLen(1))

	// The garbage collector's part of an orphan delete, then the DaemonSet goes.
	c.mgr.Stop()
	for i := range revs {
		s.g.Expect(orphanAsTheGarbageCollectorDoes(s, &revs[i], old.UID)).To(Succeed(),
			"the garbage collector cannot orphan the revision")
	}
	for _, p := range s.pods("agent") {
		s.g.Expect(orphanAsTheGarbageCollectorDoes(s, &p, old.UID)).To(Succeed())
	}
	s.g.Expect(env.Client.Delete(s.ctx, old)).To(Succeed())

	startController(t)
	re := s.daemonSet("agent", "agent:v1", func(ds *daemonsetv1alpha1.DaemonSet) {
		ds.Spec.Template.Annotations = map[string]string{"z": "<&>", "a": "1"}
		ds.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "B", Value: "x"}, {Name: "A", Value: "1e3"}}
	})
	s.g.Eventually(func() []types.UID {
		var owners []types.UID
		for _, rev := range revisionsOf(s, "agent") {
			if ref := metav1.GetControllerOf(&rev); ref != nil {
				owners = append(owners, ref.UID)
			}
		}
		return owners
	}, timeout, poll).Should(Equal([]types.UID{re.UID}), "the orphaned revision is not adopted")
	s.g.Eventually(func() int {
		n := 0
		for _, p := range s.pods("agent") {
			if metav1.IsControlledBy(&p, re) && podUIDs[p.UID] {
				n++
			}
		}
		return n
	}, timeout, poll).Should(Equal(2), "the orphaned pods are not adopted")
	s.g.Eventually(func() int32 { return s.get("agent").Status.NumberReady }, timeout, poll).Should(BeEquivalentTo(2))
	var all corev1.PodList
	s.g.Expect(env.Client.List(s.ctx, &all, client.InNamespace(s.ns))).To(Succeed())
	s.g.Expect(all.Items).To(HaveLen(2), "the re-created DaemonSet made new pods")
	for _, p := range all.Items {
		s.g.Expect(podUIDs).To(HaveKey(p.UID), "pod %s is new", p.Name)
	}
	s.g.Expect(revisionsOf(s, "agent")).To(HaveLen(1))
}

// A revision an earlier version wrote with its data in a struct's field order, under a DaemonSet deleted with
// --cascade=orphan: the garbage collector's patch is refused for it, so the controller takes its own owner
// reference off, keeping the data as it is, and the delete can complete.
func TestAnOrphanDeleteCompletesOverARevisionOfAnEarlierVersion(t *testing.T) {
	s := newScenario(t)
	startController(t)
	ds := s.daemonSet("legacy", "agent:v1")
	// As an earlier version wrote it: the template's JSON in field order, not sorted.
	data := `{"spec":{"template":{"metadata":{"labels":{"daemonset.keelson.dev/name":"legacy"}},"spec":{"containers":[{"name":"app","image":"agent:v0","resources":{}}]}}}}`
	old := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: "legacy-old", Namespace: s.ns,
			Labels:          map[string]string{daemonsetv1alpha1.NameLabel: "legacy", "controller-revision-hash": "old"},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, daemonsetv1alpha1.GroupVersion.WithKind("DaemonSet"))}},
		Data: runtime.RawExtension{Raw: []byte(data)}, Revision: 1,
	}
	s.g.Expect(env.Client.Create(s.ctx, old)).To(Succeed())
	s.g.Expect(orphanAsTheGarbageCollectorDoes(s, old.DeepCopy(), ds.UID)).NotTo(Succeed(),
		"the apiserver admits the collector's patch of such a revision: the test proves nothing")

	s.g.Expect(env.Client.Delete(s.ctx, ds, client.PropagationPolicy(metav1.DeletePropagationOrphan))).To(Succeed())
	s.g.Eventually(func() []metav1.OwnerReference {
		var rev appsv1.ControllerRevision
		s.g.Expect(env.Client.Get(s.ctx, client.ObjectKeyFromObject(old), &rev)).To(Succeed())
		return rev.OwnerReferences
	}, timeout, poll).Should(BeEmpty(), "the revision still names the DaemonSet being deleted")
	var rev appsv1.ControllerRevision
	s.g.Expect(env.Client.Get(s.ctx, client.ObjectKeyFromObject(old), &rev)).To(Succeed())
	s.g.Expect(string(rev.Data.Raw)).To(Equal(data), "the revision's data changed")
	// What is left of the collector's part (the finalizer) no longer needs the revision: take it off as it would.
	s.g.Expect(env.Client.Patch(s.ctx, s.get("legacy"), client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"finalizers":null}}`)))).To(Succeed())
}
