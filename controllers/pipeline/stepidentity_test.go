package pipeline_test

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
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
