package daemonset

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// A failure the policy declared lives in the status, and also on the failed revision's ControllerRevision
// (RolloutFailureAnnotation): a status can be lost while the template stays (a restore that does not restore
// status, an orphan delete and the same DaemonSet applied again), and a failure found nowhere would roll the failed
// revision out again, until it failed again on maxFailedNodes more nodes. The revision is where the failure belongs:
// it is kept while the template is its, adopted with the pods, and the annotation goes once the template moves on.

// failureOfRevision is the failure recorded on rev, nil when none is or it cannot be read (a hand-edited annotation is
// ignored, and removed by the next pass, as any record that does not match the pass's failure is).
func failureOfRevision(rev *appsv1.ControllerRevision) *daemonsetv1alpha1.RolloutFailure {
	raw, ok := rev.Annotations[daemonsetv1alpha1.RolloutFailureAnnotation]
	if !ok {
		return nil
	}
	var f daemonsetv1alpha1.RolloutFailure
	if err := json.Unmarshal([]byte(raw), &f); err != nil || f.Revision != rev.Labels[RevisionLabel] {
		return nil
	}
	return &f
}

// recordedFailure is the failure a pass starts from: the status's, else the one recorded on the update revision.
func recordedFailure(status *daemonsetv1alpha1.RolloutFailure, revs []appsv1.ControllerRevision, updateHash string) *daemonsetv1alpha1.RolloutFailure {
	if status != nil {
		return status
	}
	for i := range revs {
		if revs[i].Labels[RevisionLabel] == updateHash {
			return failureOfRevision(&revs[i])
		}
	}
	return nil
}

// failureRecordWrites says, for each revision, the record it should carry: failure on the revision it names, none on
// any other. It returns the revisions whose record differs, each with the record to write (nil: remove it).
func failureRecordWrites(revs []appsv1.ControllerRevision, failure *daemonsetv1alpha1.RolloutFailure) map[*appsv1.ControllerRevision]*daemonsetv1alpha1.RolloutFailure {
	out := map[*appsv1.ControllerRevision]*daemonsetv1alpha1.RolloutFailure{}
	for i := range revs {
		rev := &revs[i]
		var want *daemonsetv1alpha1.RolloutFailure
		if failure != nil && failure.Revision == rev.Labels[RevisionLabel] {
			want = failure
		}
		_, annotated := rev.Annotations[daemonsetv1alpha1.RolloutFailureAnnotation]
		have := failureOfRevision(rev)
		switch {
		case want == nil && annotated:
			out[rev] = nil
		case want != nil && (have == nil || !equality.Semantic.DeepEqual(*have, *want)):
			out[rev] = want
		}
	}
	return out
}

// syncFailureRecords writes the failure onto the revision it names and takes any other record off, by merge patch of
// the annotation alone (a revision's data is immutable, and a merge patch leaves it byte for byte).
func (r *Reconciler) syncFailureRecords(ctx context.Context, revs []appsv1.ControllerRevision, failure *daemonsetv1alpha1.RolloutFailure) error {
	for rev, want := range failureRecordWrites(revs, failure) {
		var value any // JSON null removes the annotation
		if want != nil {
			b, err := json.Marshal(want)
			if err != nil {
				return fmt.Errorf("encoding the rollout failure: %w", err)
			}
			value = string(b)
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{
			daemonsetv1alpha1.RolloutFailureAnnotation: value}}})
		if err != nil {
			return err
		}
		if err := r.Patch(ctx, rev, client.RawPatch(types.MergePatchType, patch)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("recording the rollout failure on revision %s: %w", rev.Name, err)
		}
	}
	return nil
}
