package daemonset

import (
	"encoding/json"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// InPlaceUpdateAnnotation is set on a pod updated in place: the revision it was updated to and, for each container
// whose image changed, the ID of the container that ran before. The update is done once each of those containers
// runs under a new ID and is ready; until then the pod counts as neither ready nor available.
const InPlaceUpdateAnnotation = "daemonset.keelson.dev/in-place-update"

// inPlaceState is the value of InPlaceUpdateAnnotation.
type inPlaceState struct {
	// Revision is the revision the pod was updated to.
	Revision string `json:"revision"`
	// Containers maps each container whose image changed to the ID of the container that ran before ("" when none
	// had started).
	Containers map[string]string `json:"containers"`
}

// inPlaceImages says whether a pod of template from can become one of template to by a patch: true when the two
// differ only in container images and in the template's labels and annotations, which the apiserver lets a running
// pod change. It returns the images that change, by container name. Init containers, resources, environment and
// everything else need a new pod.
func inPlaceImages(from, to *corev1.PodTemplateSpec) (map[string]string, bool) {
	if len(from.Spec.Containers) != len(to.Spec.Containers) {
		return nil, false
	}
	patched := from.Spec.DeepCopy()
	images := map[string]string{}
	for i, c := range to.Spec.Containers {
		if patched.Containers[i].Name != c.Name {
			return nil, false
		}
		if patched.Containers[i].Image != c.Image {
			images[c.Name] = c.Image
			patched.Containers[i].Image = c.Image
		}
	}
	if !equality.Semantic.DeepEqual(*patched, to.Spec) {
		return nil, false
	}
	return images, true
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

// inPlacePatch is the strategic merge patch that moves pod from its revision's template from to revision hash of
// template to: the changed images; the template's labels and annotations (keys the old template set and the new
// one drops are removed; keys others added are left alone); the revision label; and the annotation recording the
// containers that must restart. It carries the pod's resourceVersion: the containers it records must be the ones
// running now, so a pod that changed since it was read is refused with a conflict, and read again.
func inPlacePatch(pod *corev1.Pod, from, to *corev1.PodTemplateSpec, hash string) ([]byte, error) {
	images, _ := inPlaceImages(from, to)
	state := inPlaceState{Revision: hash, Containers: map[string]string{}}
	running := map[string]corev1.ContainerStatus{}
	for _, cs := range pod.Status.ContainerStatuses {
		running[cs.Name] = cs
	}
	var containers []map[string]string
	for _, c := range to.Spec.Containers { // in template order, so the patch is stable
		image, ok := images[c.Name]
		if !ok {
			continue
		}
		containers = append(containers, map[string]string{"name": c.Name, "image": image})
		// A container that still runs the image it goes back to (an update undone before the kubelet acted on it)
		// is not restarted by the kubelet, which finds it matching its spec again: there is nothing to wait for.
		if cs, found := running[c.Name]; !found || !sameImage(cs.Image, image) {
			state.Containers[c.Name] = cs.ContainerID
		}
	}
	recorded, err := json.Marshal(state)
	if err != nil {
		return nil, err
	}
	labels := changedKeys(from.Labels, to.Labels)
	labels[RevisionLabel] = &hash
	annotations := changedKeys(from.Annotations, to.Annotations)
	value := string(recorded)
	annotations[InPlaceUpdateAnnotation] = &value
	body := map[string]any{
		"metadata": map[string]any{
			"resourceVersion": pod.ResourceVersion,
			"labels":          labels,
			"annotations":     annotations,
		},
	}
	if len(containers) > 0 {
		body["spec"] = map[string]any{"containers": containers}
	}
	return json.Marshal(body)
}

// sameImage says whether the image a container status reports is the image a spec names: the runtime may report a
// short Docker Hub name in full ("nginx:1.27" as "docker.io/library/nginx:1.27"), and a name without a tag or
// digest with ":latest".
func sameImage(reported, spec string) bool {
	full := func(ref string) string {
		name := ref
		if i := strings.Index(ref, "@"); i >= 0 {
			name = ref[:i]
		} else if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
			name = ref[:i]
		} else {
			ref += ":latest"
		}
		first, _, found := strings.Cut(name, "/")
		switch {
		case !found:
			ref = "docker.io/library/" + ref
		case !strings.ContainsAny(first, ".:") && first != "localhost":
			ref = "docker.io/" + ref
		}
		return ref
	}
	return reported == spec || full(reported) == full(spec)
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
		if !found || cs.ContainerID == "" || cs.ContainerID == before || !cs.Ready || cs.State.Running == nil {
			return false, time.Time{}
		}
		if started := cs.State.Running.StartedAt.Time; started.After(since) {
			since = started
		}
	}
	return true, since
}
