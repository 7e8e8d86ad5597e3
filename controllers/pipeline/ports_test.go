//go:build integration

package pipeline_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
)

// A step moved to a port number that someone else's port of the step's Service already uses, under another name,
// fails with PortTaken, and the Service stays as it is: the other port is not taken over and renamed.
func TestSomeoneElsesPortIsNotTakenOver(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.oneStep("taken", inferencev1alpha1.Step{Name: "a", Image: "x", Port: 9000})
	portsOf := func() map[string]int32 {
		var got corev1.Service
		out := map[string]int32{}
		if env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "taken-a"}, &got) == nil {
			for _, p := range got.Spec.Ports {
				out[p.Name] = p.Port
			}
		}
		return out
	}
	s.g.Eventually(portsOf, timeout, poll).Should(Equal(map[string]int32{"http": 9000}))
	metrics := &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: "taken-a", Namespace: s.ns},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "metrics", Port: 9100, TargetPort: intstr.FromInt32(9100)}}}}
	s.g.Expect(env.Client.Patch(s.ctx, metrics, client.Apply, client.FieldOwner("metrics-operator"))).To(Succeed()) //nolint:staticcheck // the other manager applies a typed object
	s.g.Eventually(portsOf, timeout, poll).Should(Equal(map[string]int32{"http": 9000, "metrics": 9100}))

	s.edit("taken", func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[0].Port = 9100 })
	s.g.Eventually(func() string { return s.stepStatus("taken", "a").Reason }, timeout, poll).Should(Equal(inferencev1alpha1.ReasonPortTaken))
	s.g.Expect(s.stepStatus("taken", "a").Message).To(ContainSubstring(`port 9100 named "metrics"`))
	s.g.Consistently(portsOf, time.Second, poll).Should(Equal(map[string]int32{"http": 9000, "metrics": 9100}))

	// Another port: the step is applied again.
	s.edit("taken", func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[0].Port = 9001 })
	s.g.Eventually(portsOf, timeout, poll).Should(Equal(map[string]int32{"http": 9001, "metrics": 9100}))
	s.g.Eventually(func() string { return s.stepStatus("taken", "a").Reason }, timeout, poll).ShouldNot(Equal(inferencev1alpha1.ReasonPortTaken))
}
