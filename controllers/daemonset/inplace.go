package daemonset

import (
	"encoding/json"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// InPlaceUpdateAnnotation is set on a pod updated in place: the revision it was updated to and, for each container
// the kubelet must restart, the container that ran before (its ID, and the image its spec named). The update is
// done once each of those containers runs under a new ID and is ready; until then the pod counts as neither ready
// nor available.
const InPlaceUpdateAnnotation = "daemonset.keelson.dev/in-place-update"

// inPlaceState is the value of InPlaceUpdateAnnotation.
type inPlaceState struct {
	// Revision is the revision the pod was updated to.
	Revision string `json:"revision"`
	// Containers are the containers the kubelet must restart, by name.
	Containers map[string]runningContainer `json:"containers"`
	// Started is when the update was made (RFC 3339): a failure policy's progress deadline runs from then.
	Started string `json:"started,omitempty"`
}

// runningContainer is a container as it ran before an update in place.
type runningContainer struct {
	// ID is its container ID ("" when none had started).
	ID string `json:"id"`
	// Image is the image the pod's spec named when it was started: the kubelet restarts a container whose spec
	// names another image, compared as written.
	Image string `json:"image"`
}

// inPlaceImages says whether a pod of template from can become one of template to by a patch: true when the two
// differ only in container images and in the template's labels, which the apiserver lets a running pod change. It
// returns the images that change, by container name. A change of the template's annotations needs a new pod: an
// annotation is often changed to make pods restart (a config checksum, kubectl rollout restart's restartedAt), and
// a patch would restart nothing. So do init containers, resources, environment and everything else.
func inPlaceImages(from, to *corev1.PodTemplateSpec) (map[string]string, bool) {
	if len(from.Spec.Containers) != len(to.Spec.Containers) || !equality.Semantic.DeepEqual(from.Annotations, to.Annotations) {
		return nil, false
	}
	patched := from.Spec.DeepCopy()
	images := map[string]string{}
	for i, c := range to.Spec.Containers {
		if patched.Containers[i].Name != c.Name {
			return nil, false
		}
		if patched.Containers[i].Image != c.Image {
			if c.ImagePullPolicy == "" && defaultPullPolicy(patched.Containers[i].Image) != defaultPullPolicy(c.Image) {
				return nil, false // the pod keeps the pull policy defaulted from its old image: a new pod is needed
			}
			images[c.Name] = c.Image
			patched.Containers[i].Image = c.Image
		}
	}
	if !equality.Semantic.DeepEqual(*patched, to.Spec) {
		return nil, false
	}
	return images, true
}

// defaultPullPolicy is the imagePullPolicy the apiserver gives a container that sets none: Always for an image
// tagged latest or not tagged at all, IfNotPresent for any other tag or a digest. A pod's pull policy cannot change
// after its creation.
func defaultPullPolicy(image string) corev1.PullPolicy {
	if strings.Contains(image, "@") {
		return corev1.PullIfNotPresent
	}
	name := image[strings.LastIndex(image, "/")+1:] // a registry's port is before the last slash, a tag after it
	tag := ""
	if i := strings.LastIndex(name, ":"); i >= 0 {
		tag = name[i+1:]
	}
	if tag == "" || tag == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// inPlaceFrom lists the revisions whose pods can be updated in place to updateHash, among the recorded templates.
func inPlaceFrom(templates map[string]*corev1.PodTemplateSpec, updateHash string) map[string]bool {
	to, ok := templates[updateHash]
	if !ok {
		return nil
	}
	from := map[string]bool{}
	for hash, t := range templates {
		if hash == updateHash {
			continue
		}
		if _, ok := inPlaceImages(t, to); ok {
			from[hash] = true
		}
	}
	return from
}

// inPlaceRestarts is the state to record when pod is patched to run images: the containers the kubelet will
// restart, each with the container that runs now. A container runs the image its spec names, unless an earlier
// update in place of it is still pending (its container has not restarted since): then it still runs the image
// recorded then. A container patched to the very image it runs (an update undone before the kubelet acted on it)
// is not restarted by the kubelet, so there is nothing to wait for; one still pending from an earlier update, and
// not patched now, is still waited for.
func inPlaceRestarts(pod *corev1.Pod, images map[string]string) map[string]runningContainer {
	ids := map[string]string{}
	for _, cs := range pod.Status.ContainerStatuses {
		ids[cs.Name] = cs.ContainerID
	}
	previous, _ := inPlaceStateOf(pod)
	out := map[string]runningContainer{}
	for _, c := range pod.Spec.Containers {
		running := runningContainer{ID: ids[c.Name], Image: c.Image}
		if before, pending := previous.Containers[c.Name]; pending && before.ID == running.ID {
			running.Image = before.Image
		}
		target := c.Image
		if image, ok := images[c.Name]; ok {
			target = image
		}
		if target != running.Image {
			out[c.Name] = running
		}
	}
	return out
}

// inPlacePatch is the strategic merge patch that moves pod of ds from its revision's template from to revision hash
// of template to, at now: the changed images; the pod's labels as the new revision's pods have them (keys the old
// revision's pods had and the new one's do not are removed; keys others added are left alone; the controller's
// own labels are never removed); and the annotation recording the containers that must restart. It carries the
// pod's resourceVersion: the containers it records must be the ones running now, so a pod that changed since it was
// read is refused with a conflict, and read again.
func inPlacePatch(ds *daemonsetv1alpha1.DaemonSet, pod *corev1.Pod, from, to *corev1.PodTemplateSpec, hash string,
	now time.Time) ([]byte, error) {
	images, _ := inPlaceImages(from, to)
	state := inPlaceState{Revision: hash, Containers: inPlaceRestarts(pod, images), Started: now.UTC().Format(time.RFC3339)}
	recorded, err := json.Marshal(state)
	if err != nil {
		return nil, err
	}
	var containers []map[string]string
	for _, c := range to.Spec.Containers { // in template order, so the patch is stable
		if image, ok := images[c.Name]; ok {
			containers = append(containers, map[string]string{"name": c.Name, "image": image})
		}
	}
	value := string(recorded)
	body := map[string]any{
		"metadata": map[string]any{
			"resourceVersion": pod.ResourceVersion,
			"labels":          changedKeys(podLabels(ds, from, pod.Labels[RevisionLabel]), podLabels(ds, to, hash)),
			"annotations":     map[string]*string{InPlaceUpdateAnnotation: &value},
		},
	}
	if len(containers) > 0 {
		body["spec"] = map[string]any{"containers": containers}
	}
	return json.Marshal(body)
}

// changedKeys is the merge patch of a string map from old to new: new's values, and nil (remove) for keys only old had.
func changedKeys(old, new map[string]string) map[string]*string {
	out := map[string]*string{}
	for k := range old {
		if _, kept := new[k]; !kept {
			out[k] = nil
		}
	}
	for k, v := range new {
		out[k] = &v
	}
	return out
}

// inPlaceStateOf reads the pod's in-place update record; ok is false when it has none for its current revision.
func inPlaceStateOf(pod *corev1.Pod) (inPlaceState, bool) {
	raw, found := pod.Annotations[InPlaceUpdateAnnotation]
	if !found {
		return inPlaceState{}, false
	}
	var st inPlaceState
	if err := json.Unmarshal([]byte(raw), &st); err != nil || st.Revision != pod.Labels[RevisionLabel] {
		return inPlaceState{}, false
	}
	return st, true
}

// inPlaceRestarted says whether a pod updated in place runs its updated containers: each one has started again
// (under a new container ID) and is ready. since is when the last of them started, for minReadySeconds. A pod never
// updated in place has nothing to wait for.
func inPlaceRestarted(pod *corev1.Pod) (done bool, since time.Time) {
	st, ok := inPlaceStateOf(pod)
	if !ok {
		return true, time.Time{}
	}
	statuses := map[string]corev1.ContainerStatus{}
	for _, cs := range pod.Status.ContainerStatuses {
		statuses[cs.Name] = cs
	}
	for name, before := range st.Containers {
		cs, found := statuses[name]
		if !found || cs.ContainerID == "" || cs.ContainerID == before.ID || !cs.Ready || cs.State.Running == nil {
			return false, time.Time{}
		}
		if started := cs.State.Running.StartedAt.Time; started.After(since) {
			since = started
		}
	}
	return true, since
}

// hasInPlaceGate reports whether pod carries the readiness gate InPlaceReadyCondition.
func hasInPlaceGate(pod *corev1.Pod) bool {
	for _, g := range pod.Spec.ReadinessGates {
		if g.ConditionType == InPlaceReadyCondition {
			return true
		}
	}
	return false
}

// inPlaceGateStatus is the status of pod's InPlaceReadyCondition ("" when it has none).
func inPlaceGateStatus(pod *corev1.Pod) corev1.ConditionStatus {
	for _, c := range pod.Status.Conditions {
		if c.Type == InPlaceReadyCondition {
			return c.Status
		}
	}
	return ""
}

// gateState is how the expectations name a pod's gate condition, apart from its revision label.
func gateState(status corev1.ConditionStatus) string { return "gate:" + string(status) }

// gatePatch is the strategic merge patch of a pod's status that sets its InPlaceReadyCondition, guarded by the
// resourceVersion read (a pod changed since is read again).
func gatePatch(pod *corev1.Pod, status corev1.ConditionStatus, reason, message string, now time.Time) ([]byte, error) {
	at := now.UTC().Format(time.RFC3339)
	conditions := []map[string]any{{
		"type": InPlaceReadyCondition, "status": status, "reason": reason, "message": message, "lastTransitionTime": at,
	}}
	if status == corev1.ConditionFalse {
		// Out of its Services in this very write: the endpoints controllers follow Ready, which the kubelet would
		// turn False only at its next status sync, perhaps after it began stopping the containers.
		conditions = append(conditions, map[string]any{
			"type": corev1.PodReady, "status": corev1.ConditionFalse, "reason": "ReadinessGatesNotReady",
			"message": "the pod is being updated in place", "lastTransitionTime": at,
		})
	}
	return json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": pod.ResourceVersion},
		"status":   map[string]any{"conditions": conditions},
	})
}

// updateStarted is when pod began running its revision: when it was updated in place to it, else when it was created.
func updateStarted(pod *corev1.Pod) time.Time {
	if st, ok := inPlaceStateOf(pod); ok {
		if at, err := time.Parse(time.RFC3339, st.Started); err == nil {
			return at
		}
	}
	return pod.CreationTimestamp.Time
}
