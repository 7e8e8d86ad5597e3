//go:build integration

package pipeline_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
)

// A step's identity is its name: inserting a step before the others, removing one and reordering them leave every
// other step's Deployment as it was (same generation, same pod template), so none of them rolls.
func TestAddingRemovingAndReorderingStepsLeavesTheOthersUntouched(t *testing.T) {
	s := newScenario(t)
	c := startController(t)
	s.node(s.ns+"-a", 0, false)
	s.node(s.ns+"-b", 0, false)
	p := &inferencev1alpha1.Pipeline{}
	p.Name, p.Namespace = "stages", s.ns
	p.Spec.ModelStorage = inferencev1alpha1.ModelStorage{Type: inferencev1alpha1.StorageNFS,
		CSIParameter: map[string]string{"server": "nfs.example.internal", "share": "/exports/models"}}
	p.Spec.Steps = []inferencev1alpha1.Step{
		{Name: "a", Image: "a:v1", Location: s.ns + "-a", Model: "m/a", Next: []string{"b"}},
		{Name: "b", Image: "b:v1", Location: s.ns + "-b", Model: "m/b"},
	}
	s.g.Expect(env.Client.Create(s.ctx, p)).To(Succeed())
	deployment := func(step string) *appsv1.Deployment {
		var d appsv1.Deployment
		if err := env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "stages-" + step}, &d); err != nil {
			return nil
		}
		return &d
	}
	s.g.Eventually(func() *appsv1.Deployment { return deployment("b") }, timeout, poll).ShouldNot(BeNil())
	quiet(s, c)
	generations := func() map[string]int64 {
		return map[string]int64{"a": deployment("a").Generation, "b": deployment("b").Generation}
	}
	before := generations()

	edits := map[string]func(*inferencev1alpha1.Pipeline){
		"a step inserted first": func(p *inferencev1alpha1.Pipeline) {
			p.Spec.Steps = append([]inferencev1alpha1.Step{{Name: "z", Image: "z:v1", Location: s.ns + "-a", Model: "m/z",
				Next: []string{"a"}}}, p.Spec.Steps...)
		},
		"the steps reordered": func(p *inferencev1alpha1.Pipeline) {
			st := p.Spec.Steps
			p.Spec.Steps = []inferencev1alpha1.Step{st[1], st[0], st[2]} // a, z, b: the last step sends nowhere
		},
		"the inserted step removed": func(p *inferencev1alpha1.Pipeline) {
			var kept []inferencev1alpha1.Step
			for _, st := range p.Spec.Steps {
				if st.Name != "z" {
					kept = append(kept, st)
				}
			}
			p.Spec.Steps = kept
		},
	}
	for _, edit := range []string{"a step inserted first", "the steps reordered", "the inserted step removed"} {
		s.g.Eventually(func() error {
			p := s.get("stages")
			edits[edit](p)
			return env.Client.Update(s.ctx, p)
		}, timeout, poll).Should(Succeed(), edit)
		gen := s.get("stages").Generation
		s.g.Eventually(func() int64 { return s.get("stages").Status.ObservedGeneration }, timeout, poll).Should(Equal(gen), edit)
		quiet(s, c)
		s.g.Expect(generations()).To(Equal(before), "%s changed another step's Deployment", edit)
	}
}

// Renaming a step rewires the step that sends to it, which rolls. The old step's Deployment and Service stay while
// a pod or pod template of the pipeline still names the old Service (the upstream step's old pods keep sending to
// it until they are gone) and go once none does: a renamed step loses no request while its upstream rolls.
func TestARenamedStepsServiceStaysUntilItsCallersHaveRolled(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.node(s.ns+"-a", 0, false)
	p := &inferencev1alpha1.Pipeline{}
	p.Name, p.Namespace = "renamed", s.ns
	p.Spec.ModelStorage = inferencev1alpha1.ModelStorage{Type: inferencev1alpha1.StoragePVC, ClaimName: "models"}
	p.Spec.Steps = []inferencev1alpha1.Step{
		{Name: "a", Image: "a:v1", Location: s.ns + "-a", Next: []string{"b"}},
		{Name: "b", Image: "b:v1", Location: s.ns + "-a"},
	}
	s.g.Expect(env.Client.Create(s.ctx, p)).To(Succeed())
	exists := func(obj client.Object, name string) func() bool {
		return func() bool {
			err := env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: name}, obj)
			return err == nil && obj.GetDeletionTimestamp() == nil
		}
	}
	s.g.Eventually(exists(&corev1.Service{}, "renamed-b"), timeout, poll).Should(BeTrue())
	s.g.Eventually(exists(&appsv1.Deployment{}, "renamed-a"), timeout, poll).Should(BeTrue())
	oldURL := "http://renamed-b." + s.ns + ".svc:8080"
	a := s.deployment("renamed-a")
	s.g.Expect(a.Spec.Template.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "NEXT_STEP_URL", Value: oldURL}))

	// A running pod of step a, made from its template before the rename (the kubelet and the ReplicaSet are not here).
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "renamed-a-old", Namespace: s.ns, Labels: a.Spec.Template.Labels},
		Spec: *a.Spec.Template.Spec.DeepCopy()}
	s.g.Expect(env.Client.Create(s.ctx, pod)).To(Succeed())

	s.g.Eventually(func() error {
		p := s.get("renamed")
		p.Spec.Steps[0].Next = []string{"c"}
		p.Spec.Steps[1].Name = "c"
		return env.Client.Update(s.ctx, p)
	}, timeout, poll).Should(Succeed())
	s.g.Eventually(exists(&corev1.Service{}, "renamed-c"), timeout, poll).Should(BeTrue())
	s.g.Eventually(func() []corev1.EnvVar { return s.deployment("renamed-a").Spec.Template.Spec.Containers[0].Env }, timeout, poll).
		Should(ContainElement(corev1.EnvVar{Name: "NEXT_STEP_URL", Value: "http://renamed-c." + s.ns + ".svc:8080"}))
	gen := s.get("renamed").Generation
	s.g.Eventually(func() int64 { return s.get("renamed").Status.ObservedGeneration }, timeout, poll).Should(Equal(gen))
	s.g.Consistently(exists(&corev1.Service{}, "renamed-b"), time.Second, poll).Should(BeTrue(),
		"the old step's Service went while a pod still sends to it")
	s.g.Expect(exists(&appsv1.Deployment{}, "renamed-b")()).To(BeTrue(), "the old step's Deployment went while a pod still sends to it")

	// The old pod gone, nothing names the old Service any more: the old step goes.
	s.g.Expect(env.Client.Delete(s.ctx, pod, client.GracePeriodSeconds(0))).To(Succeed())
	s.g.Eventually(exists(&corev1.Service{}, "renamed-b"), timeout, poll).Should(BeFalse())
	s.g.Eventually(exists(&appsv1.Deployment{}, "renamed-b"), timeout, poll).Should(BeFalse())
}

// A removed step that names its own Service (a user's variable) is not kept by that alone: it goes with the spec.
func TestARemovedStepThatCallsItselfGoes(t *testing.T) {
	s := newScenario(t)
	startController(t)
	p := &inferencev1alpha1.Pipeline{}
	p.Name, p.Namespace = "selfish", s.ns
	p.Spec.ModelStorage = inferencev1alpha1.ModelStorage{Type: inferencev1alpha1.StoragePVC, ClaimName: "models"}
	p.Spec.Steps = []inferencev1alpha1.Step{
		{Name: "a", Image: "a:v1"},
		{Name: "b", Image: "b:v1", Env: []corev1.EnvVar{{Name: "SELF_URL", Value: "http://selfish-b." + s.ns + ".svc:8080"}}},
	}
	s.g.Expect(env.Client.Create(s.ctx, p)).To(Succeed())
	exists := func(name string) func() bool {
		return func() bool {
			var svc corev1.Service
			err := env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: name}, &svc)
			return err == nil && svc.DeletionTimestamp == nil
		}
	}
	s.g.Eventually(exists("selfish-b"), timeout, poll).Should(BeTrue())
	b := s.deployment("selfish-b")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "selfish-b-1", Namespace: s.ns, Labels: b.Spec.Template.Labels},
		Spec: *b.Spec.Template.Spec.DeepCopy()}
	s.g.Expect(env.Client.Create(s.ctx, pod)).To(Succeed())
	s.g.Eventually(func() error {
		p := s.get("selfish")
		p.Spec.Steps = p.Spec.Steps[:1]
		return env.Client.Update(s.ctx, p)
	}, timeout, poll).Should(Succeed())
	s.g.Eventually(exists("selfish-b"), timeout, poll).Should(BeFalse(), "a step that calls only itself was kept")
}
