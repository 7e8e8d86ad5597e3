//go:build integration

package daemonset_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// refusePods installs a ValidatingAdmissionPolicy, named name and bound everywhere, that refuses the pod operation
// op wherever expression is false, with message. It returns what removes it, which the test's end does too; the
// caller waits until the apiserver enforces it.
func refusePods(t *testing.T, name string, op admissionregistrationv1.OperationType, expression, message string) (lift func()) {
	t.Helper()
	ctx := context.Background()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{op},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: expression, Message: message}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	g := NewWithT(t)
	g.Expect(env.Client.Create(ctx, policy)).To(Succeed())
	g.Expect(env.Client.Create(ctx, binding)).To(Succeed())
	lift = func() {
		_ = env.Client.Delete(context.Background(), binding)
		_ = env.Client.Delete(context.Background(), policy)
	}
	t.Cleanup(lift)
	return lift
}

// rejectPodsIn refuses every pod created in namespace, once the apiserver enforces it.
func rejectPodsIn(t *testing.T, namespace string) {
	t.Helper()
	refusePods(t, "deny-pods-"+namespace, admissionregistrationv1.Create, "object.metadata.namespace != '"+namespace+"'", "no pods here")
	probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: namespace},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	NewWithT(t).Eventually(func() error {
		if err := env.Client.Create(context.Background(), probe.DeepCopy(), client.DryRunAll); err == nil {
			return errNotYet
		}
		return nil
	}, timeout, poll).Should(Succeed(), "the admission policy is not enforced")
}

// keepPod refuses every deletion of pod, once the apiserver enforces it, and returns what lifts the refusal.
func keepPod(t *testing.T, pod *corev1.Pod) (lift func()) {
	t.Helper()
	lift = refusePods(t, "keep-"+pod.Namespace, admissionregistrationv1.Delete,
		"oldObject.metadata.namespace != '"+pod.Namespace+"' || oldObject.metadata.name != '"+pod.Name+"'", "this pod is kept")
	NewWithT(t).Eventually(func() error {
		if err := env.Client.Delete(context.Background(), pod.DeepCopy(), client.DryRunAll); err == nil {
			return errNotYet
		}
		return nil
	}, timeout, poll).Should(Succeed(), "the admission policy is not enforced")
	return lift
}
