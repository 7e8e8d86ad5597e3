package pipeline

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/conditions"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
)

// observed is everything status is computed from.
type observed struct {
	pv          *corev1.PersistentVolume
	pvc         *corev1.PersistentVolumeClaim
	deployments map[string]*appsv1.Deployment // by step name
	pods        map[string][]corev1.Pod       // by step name
	nodes       map[string]*corev1.Node       // by kubernetes.io/hostname label: the value a step's location pins to
	// invalid is why the spec cannot be run (a cycle, a missing next step), or "".
	invalid string
	// failures are the steps (storageKey: the storage) whose objects could not be written this pass.
	failures map[string]failure
	// retrying are the steps (storageKey: the storage) whose objects could not be written this pass for a reason
	// that is not a refusal (a timeout, throttling): they keep the status they had, and the pass is retried.
	retrying map[string]bool
	// podEvents are the events of the pods that wait (podEvents), read only while some do.
	podEvents []corev1.Event
	// now is when the pass observed: it dates the containers' exits and how long a pod has not been ready.
	now time.Time
	// autoscalers name, by step, the HorizontalPodAutoscalers that scale the step's Deployment, sorted: the first
	// is the one the step leaves its replicas to (more than one: none scales it).
	autoscalers map[string][]string
}

// nodeProblem says why a step cannot run on its pinned node, or returns "" when it can (or is not pinned).
func nodeProblem(s inferencev1alpha1.Step, nodes map[string]*corev1.Node) (reason, message string) {
	if s.Location == "" {
		return "", ""
	}
	n, ok := nodes[s.Location]
	if !ok {
		return inferencev1alpha1.ReasonNodeNotFound, fmt.Sprintf("node %s does not exist", s.Location)
	}
	if nodeNotReady(n) {
		ready := nodeReadiness(n)
		// The scheduler would say only "Unschedulable" with the not-ready taint's text: the node is what to look at.
		msg := fmt.Sprintf("node %s is not ready (Ready=%s", s.Location, ready.Status)
		if !ready.LastTransitionTime.IsZero() {
			msg += " since " + ready.LastTransitionTime.UTC().Format(time.RFC3339)
		}
		if ready.Reason != "" {
			msg += ", " + ready.Reason // not its message: a kubelet's holds durations that change every heartbeat
		}
		return inferencev1alpha1.ReasonNodeNotReady, msg + ")"
	}
	if n.Spec.Unschedulable {
		return inferencev1alpha1.ReasonNodeCordoned, fmt.Sprintf("node %s is cordoned", s.Location)
	}
	for name, want := range pipelinespec.GPUAsks(s) {
		have := n.Status.Allocatable[name]
		if have.Cmp(want) < 0 {
			return inferencev1alpha1.ReasonInsufficientGPU, fmt.Sprintf("node %s has %s %s allocatable, the step asks for %s",
				s.Location, have.String(), name, want.String())
		}
	}
	return "", ""
}

// placed counts the pods of a step that are on a node, not going away, not finished (Succeeded or Failed: an
// evicted pod keeps its node name), and of the current template (currentTemplate). A cordon keeps new pods off a
// node and leaves the ones there running: it is the step's problem only while a pod it wants is not placed, and a
// pod of an old template, which its rollout is about to replace, is not one it wants.
func placed(pods []corev1.Pod) int32 {
	hash := currentTemplate(pods)
	var n int32
	for _, p := range pods {
		if alive(p) && p.Spec.NodeName != "" && p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] == hash {
			n++
		}
	}
	return n
}

// stepStatus derives one step's status, saying so when an autoscaler sets its replicas, and when several claim
// them (then none does): a step that serves takes that as its reason, as nothing else needs fixing first.
func stepStatus(p *inferencev1alpha1.Pipeline, i int, o observed) inferencev1alpha1.StepStatus {
	st := stepState(p, i, o)
	switch all := o.autoscalers[st.Name]; {
	case len(all) > 1:
		st.Message += fmt.Sprintf("; HorizontalPodAutoscalers %s all scale the step's Deployment, so Kubernetes scales it "+
			"with none of them and its replicas stay as they are: delete all but one", strings.Join(all, ", "))
		if st.Phase == inferencev1alpha1.PhaseReady {
			st.Reason = inferencev1alpha1.ReasonAmbiguousAutoscalers
		}
	case st.Autoscaler != "":
		st.Message += fmt.Sprintf("; replicas are left to HorizontalPodAutoscaler %s", st.Autoscaler)
	}
	return st
}

// stepState derives one step's phase, reason and message.
func stepState(p *inferencev1alpha1.Pipeline, i int, o observed) inferencev1alpha1.StepStatus {
	s := p.Spec.Steps[i]
	name := pipelinespec.StepName(p.Spec.Steps, i)
	st := inferencev1alpha1.StepStatus{Name: name, Node: s.Location, Endpoint: Endpoint(p, name, pipelinespec.StepPort(s))}
	pods := o.pods[name]
	for _, pod := range pods {
		if alive(pod) && pod.Spec.NodeName != "" { // an evicted pod keeps the node it no longer runs on
			st.Node = pod.Spec.NodeName
			break
		}
	}
	st.LastFailure = lastFailure(pods)
	if pipelinespec.SourceOf(s.Model) == pipelinespec.ModelFetched {
		st.Model = stepModel(pods)
	}
	d := o.deployments[name]
	want := ptr.Deref(s.Replicas, 1)
	if all := o.autoscalers[name]; len(all) > 0 {
		st.Autoscaler = all[0]
	}
	if d != nil {
		st.ReadyReplicas = d.Status.ReadyReplicas
		if st.Autoscaler != "" || d.Annotations[KeptReplicasAnnotation] != "" {
			want = ptr.Deref(d.Spec.Replicas, 1) // the autoscaler's count (or the one it left), not the spec's
		}
	}
	if f, failed := o.failures[name]; failed {
		st.Phase, st.Reason, st.Message = inferencev1alpha1.PhaseFailed, f.reason, f.message
		return st
	}
	// A cordon keeps new pods off, and a node NotReady for a moment (a kubelet restarting) may still serve: either is
	// the step's problem only while it lacks pods (placed) or ready replicas.
	reason, msg := nodeProblem(s, o.nodes)
	switch {
	case reason == inferencev1alpha1.ReasonNodeCordoned && placed(pods) >= want:
		reason = ""
	case reason == inferencev1alpha1.ReasonNodeNotReady && d != nil && d.Status.ReadyReplicas >= want:
		reason = ""
	}
	if reason != "" {
		st.Phase, st.Reason, st.Message = inferencev1alpha1.PhaseDegraded, reason, msg+"; the step cannot run until it is fixed"
		return st
	}
	if d == nil {
		st.Phase, st.Reason, st.Message = inferencev1alpha1.PhasePending, inferencev1alpha1.ReasonCreating, "the step's Deployment is being created"
		return st
	}
	if m := st.Model; m != nil && m.Reason != "" && d.Status.ReadyReplicas < want {
		st.Phase, st.Reason = inferencev1alpha1.PhaseDegraded, inferencev1alpha1.ReasonModelFetchFailed
		st.Message = fmt.Sprintf("%d of %d replicas ready; fetching model %s failed (%s): %s", d.Status.ReadyReplicas, want,
			m.URI, m.Reason, m.Message)
		return st
	}
	if phase, reason, msg := currentProblem(pods, o.now); reason != "" {
		st.Phase, st.Reason = phase, reason
		st.Message = fmt.Sprintf("%d of %d replicas ready; %s", d.Status.ReadyReplicas, want, msg)
		return st
	}
	if reason, msg := volumeProblem(pods, o.podEvents); reason != "" {
		st.Phase, st.Reason = inferencev1alpha1.PhaseDegraded, reason
		st.Message = fmt.Sprintf("%d of %d replicas ready; %s", d.Status.ReadyReplicas, want, msg)
		return st
	}
	setRolloutPhase(&st, d, want, readinessProblem(pods, o.podEvents, o.now))
	return st
}

// setRolloutPhase sets the phase of a step whose pods meet no problem: where its Deployment's rollout stands, and
// what its readiness check answers (readiness, "" for nothing) when it matters.
func setRolloutPhase(st *inferencev1alpha1.StepStatus, d *appsv1.Deployment, want int32, readiness string) {
	switch {
	case deploymentCondition(d, appsv1.DeploymentProgressing, corev1.ConditionFalse) == "ProgressDeadlineExceeded":
		st.Phase, st.Reason = inferencev1alpha1.PhaseFailed, inferencev1alpha1.ReasonDeadline
		st.Message = fmt.Sprintf("%d of %d replicas ready after the progress deadline", d.Status.ReadyReplicas, want)
		if readiness != "" {
			st.Message += "; " + readiness
		}
	case rolledOut(d, want):
		st.Phase, st.Reason, st.Message = inferencev1alpha1.PhaseReady, inferencev1alpha1.ReasonReady, fmt.Sprintf("%d of %d replicas ready", d.Status.ReadyReplicas, want)
	case serving(d, want, st.Autoscaler != "") && rollingOut(d, want):
		st.Phase, st.Reason = inferencev1alpha1.PhaseReady, inferencev1alpha1.ReasonRollingOut
		st.Message = fmt.Sprintf("%d of %d replicas ready, %d of them available and %d updated to the current spec; rolling out",
			d.Status.ReadyReplicas, want, d.Status.AvailableReplicas, d.Status.UpdatedReplicas)
	case serving(d, want, st.Autoscaler != ""):
		st.Phase, st.Reason = inferencev1alpha1.PhaseReady, inferencev1alpha1.ReasonReady
		st.Message = fmt.Sprintf("%d of %d replicas ready; serving while the others start", d.Status.ReadyReplicas, want)
	case readiness != "":
		st.Phase, st.Reason = inferencev1alpha1.PhaseProgressing, inferencev1alpha1.ReasonReadinessFailing
		st.Message = fmt.Sprintf("%d of %d replicas ready; %s", d.Status.ReadyReplicas, want, readiness)
	default:
		st.Phase, st.Reason = inferencev1alpha1.PhaseProgressing, inferencev1alpha1.ReasonStarting
		st.Message = fmt.Sprintf("%d of %d replicas ready", d.Status.ReadyReplicas, want)
	}
}

func deploymentCondition(d *appsv1.Deployment, t appsv1.DeploymentConditionType, s corev1.ConditionStatus) string {
	for _, c := range d.Status.Conditions {
		if c.Type == t && c.Status == s {
			return c.Reason
		}
	}
	return ""
}

// computeStatus derives the whole status. old supplies the conditions (their transition times) and the
// observedGeneration kept when the pass failed: it moves only once every object of the spec was written.
func computeStatus(p *inferencev1alpha1.Pipeline, old inferencev1alpha1.PipelineStatus, o observed, w pipelinespec.Wiring) inferencev1alpha1.PipelineStatus {
	st := inferencev1alpha1.PipelineStatus{ObservedGeneration: p.Generation, Conditions: append([]metav1.Condition(nil), old.Conditions...)}
	if len(o.failures) > 0 || len(o.retrying) > 0 || o.invalid != "" {
		st.ObservedGeneration = old.ObservedGeneration
	}
	storageReady, storageFailure, storageFailed := setStorage(p, &st, old, o)
	worst, worstReason := setSteps(p, &st, old, o, w)
	if storageFailed {
		worst, worstReason = inferencev1alpha1.PhaseFailed, storageFailure
	}
	setPhase(p, &st, worst, worstReason, storageReady)
	return st
}

// setCondition sets a condition of the pipeline's status at its generation.
func setCondition(st *inferencev1alpha1.PipelineStatus, p *inferencev1alpha1.Pipeline, t string, ok bool, reason, msg string) {
	conditions.Set(&st.Conditions, metav1.Condition{Type: t, Status: conditions.Status(ok), Reason: reason, Message: msg,
		ObservedGeneration: p.Generation})
}

// setStorage sets the storage's phases and condition, and says whether the storage is ready, and why it failed
// when it did.
func setStorage(p *inferencev1alpha1.Pipeline, st *inferencev1alpha1.PipelineStatus, old inferencev1alpha1.PipelineStatus,
	o observed) (ready bool, failedReason string, failed bool) {
	if o.pv != nil {
		st.DetailPhase.PVPhase = string(o.pv.Status.Phase)
	}
	if o.pvc != nil {
		st.DetailPhase.PVCPhase = string(o.pvc.Status.Phase)
	}
	storageFailure, storageFailed := o.failures[storageKey]
	storageReady := !storageFailed && o.pvc != nil && o.pvc.Status.Phase == corev1.ClaimBound
	cache := p.Spec.ModelStorage.Type == inferencev1alpha1.StorageCache
	switch {
	case cache:
		// Nothing to bind: each step fetches its model into its node's cache, or mounts its claim; a failed fetch
		// or a missing claim is the step's.
		storageReady = true
		setCondition(st, p, inferencev1alpha1.ConditionStorageReady, true, inferencev1alpha1.ReasonCache, "each step's model is fetched into the cache on the step's node, or mounted from its claim")
	case o.retrying[storageKey] && meta.FindStatusCondition(old.Conditions, inferencev1alpha1.ConditionStorageReady) != nil:
		// Kept as it was while the write is retried.
		storageReady = meta.IsStatusConditionTrue(old.Conditions, inferencev1alpha1.ConditionStorageReady)
	case storageFailed:
		setCondition(st, p, inferencev1alpha1.ConditionStorageReady, false, storageFailure.reason, storageFailure.message)
	case storageReady:
		setCondition(st, p, inferencev1alpha1.ConditionStorageReady, true, inferencev1alpha1.ReasonBound, fmt.Sprintf("claim %s is bound", ClaimName(p)))
	case o.pvc != nil && o.pvc.Status.Phase == corev1.ClaimLost:
		setCondition(st, p, inferencev1alpha1.ConditionStorageReady, false, inferencev1alpha1.ReasonStorageLost, fmt.Sprintf("claim %s lost its volume", ClaimName(p)))
	default:
		setCondition(st, p, inferencev1alpha1.ConditionStorageReady, false, inferencev1alpha1.ReasonStorageWaiting, fmt.Sprintf("claim %s is not bound yet (claim %s, volume %s)",
			ClaimName(p), orNone(st.DetailPhase.PVCPhase), orNone(st.DetailPhase.PVPhase)))
	}
	return storageReady, storageFailure.reason, storageFailed
}

// setSteps sets each step's status, the count of those ready, the pipeline's URL and the StepsReady condition, and
// returns the worst phase of a step and its reason (an invalid spec's, when the spec is invalid).
func setSteps(p *inferencev1alpha1.Pipeline, st *inferencev1alpha1.PipelineStatus, old inferencev1alpha1.PipelineStatus,
	o observed, w pipelinespec.Wiring) (worst inferencev1alpha1.Phase, worstReason string) {
	var notReady []string
	worst = inferencev1alpha1.PhaseReady
	ready := 0
	for i := range p.Spec.Steps {
		ss := stepStatus(p, i, o)
		if prev, ok := stepOf(old, ss.Name); ok && o.retrying[ss.Name] {
			ss = prev // kept as it was while the write is retried
		}
		st.Steps = append(st.Steps, ss)
		st.DetailPhase.StepsPhase = append(st.DetailPhase.StepsPhase, inferencev1alpha1.StepPhase{Name: ss.Name, DeploymentPhase: ss.Phase})
		if ss.Phase == inferencev1alpha1.PhaseReady {
			ready++
		} else {
			notReady = append(notReady, fmt.Sprintf("%s (%s: %s)", ss.Name, ss.Reason, ss.Message))
		}
		if w := worse(worst, ss.Phase); w != worst || worstReason == "" && ss.Phase != inferencev1alpha1.PhaseReady {
			worst, worstReason = w, ss.Reason
		}
	}
	st.StepsReady = fmt.Sprintf("%d/%d", ready, len(p.Spec.Steps))
	if entry := pipelinespec.EntryStep(p.Spec.Steps, w); entry != "" {
		st.URL = Endpoint(p, entry, pipelinespec.StepPort(p.Spec.Steps[indexOf(p.Spec.Steps, entry)]))
	}
	if o.invalid != "" {
		setCondition(st, p, inferencev1alpha1.ConditionStepsReady, false, inferencev1alpha1.ReasonInvalidSpec, o.invalid)
		worst, worstReason = inferencev1alpha1.PhaseFailed, inferencev1alpha1.ReasonInvalidSpec
	} else if len(notReady) == 0 {
		setCondition(st, p, inferencev1alpha1.ConditionStepsReady, true, inferencev1alpha1.ReasonAllStepsReady, fmt.Sprintf("all %d steps are ready", len(p.Spec.Steps)))
	} else {
		setCondition(st, p, inferencev1alpha1.ConditionStepsReady, false, inferencev1alpha1.ReasonStepsNotReady, "waiting for "+strings.Join(notReady, "; "))
	}
	return worst, worstReason
}

// setPhase sets the pipeline's phase and its Ready condition, whose reason, when it is not Ready, is the most
// pressing one.
func setPhase(p *inferencev1alpha1.Pipeline, st *inferencev1alpha1.PipelineStatus, worst inferencev1alpha1.Phase,
	worstReason string, storageReady bool) {
	switch {
	case p.DeletionTimestamp != nil:
		st.Phase = inferencev1alpha1.PhaseDeleting
	case worst == inferencev1alpha1.PhaseReady && !storageReady && mountsStorage(p):
		// A step that mounts the storage cannot serve without it. One whose steps all take their models elsewhere
		// (a claim of their own, a URI) serves regardless: a claim that binds only when a pod mounts it never would.
		st.Phase = inferencev1alpha1.PhaseProgressing
	default:
		st.Phase = worst
	}
	if st.Phase == inferencev1alpha1.PhaseReady {
		msg := "storage is bound and every step is ready at " + st.URL
		if !mountsStorage(p) {
			msg = "every step is ready at " + st.URL
		}
		setCondition(st, p, inferencev1alpha1.ConditionReady, true, inferencev1alpha1.ReasonReady, msg)
		return
	}
	// The reason of a pipeline that is not Ready is the most pressing one (kubectl get ipl shows it): the worst
	// step's, else the storage's.
	reason := worstReason
	if reason == "" {
		reason = meta.FindStatusCondition(st.Conditions, inferencev1alpha1.ConditionStorageReady).Reason
	}
	msg := fmt.Sprintf("pipeline is %s", st.Phase)
	for _, c := range st.Conditions {
		if c.Type != inferencev1alpha1.ConditionReady && c.Status != metav1.ConditionTrue {
			msg += "; " + c.Message
		}
	}
	setCondition(st, p, inferencev1alpha1.ConditionReady, false, reason, msg)
}

// worse orders phases by how much they need attention.
func worse(a, b inferencev1alpha1.Phase) inferencev1alpha1.Phase {
	rank := map[inferencev1alpha1.Phase]int{inferencev1alpha1.PhaseReady: 0, inferencev1alpha1.PhaseProgressing: 1,
		inferencev1alpha1.PhasePending: 2, inferencev1alpha1.PhaseDegraded: 3, inferencev1alpha1.PhaseFailed: 4}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

func orNone(s string) string {
	if s == "" {
		return "none yet"
	}
	return s
}
