package pipelinespec

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
)

// StepName is the step's name, or step-<index> when it has none.
func StepName(steps []inferencev1alpha1.Step, i int) string {
	if steps[i].Name != "" {
		return steps[i].Name
	}
	return "step-" + strconv.Itoa(i)
}

// Wiring is who sends to whom: for each step name, the names of its next steps.
type Wiring map[string][]string

// Wire resolves each step's next steps (the following step by default; none for the last) and checks the graph:
// every name unique, every next step existing, no step feeding itself, and no cycle. Errors carry field paths.
func Wire(steps []inferencev1alpha1.Step) (Wiring, field.ErrorList) {
	var errs field.ErrorList
	p := field.NewPath("spec", "steps")
	index := map[string]int{}
	for i := range steps {
		name := StepName(steps, i)
		if j, dup := index[name]; dup {
			errs = append(errs, field.Duplicate(p.Index(i).Child("name"), fmt.Sprintf("%s (also step %d)", name, j)))
		}
		index[name] = i
	}
	w := Wiring{}
	for i, s := range steps {
		name := StepName(steps, i)
		switch {
		case len(s.Next) > 0:
			for k, n := range s.Next {
				if _, ok := index[n]; !ok {
					errs = append(errs, field.NotFound(p.Index(i).Child("next").Index(k), n))
					continue
				}
				if n == name {
					errs = append(errs, field.Invalid(p.Index(i).Child("next").Index(k), n, "a step cannot feed itself"))
					continue
				}
				w[name] = append(w[name], n)
			}
		case i+1 < len(steps):
			w[name] = []string{StepName(steps, i+1)}
		}
	}
	if cycle := findCycle(steps, w); cycle != nil {
		errs = append(errs, field.Invalid(p, strings.Join(cycle, " -> "), "the steps must form a DAG, but they form a cycle"))
	}
	return w, errs
}

// findCycle returns a cycle of step names (first name repeated at the end), or nil.
func findCycle(steps []inferencev1alpha1.Step, w Wiring) []string {
	const (
		unseen = iota
		onPath
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(string) []string
	visit = func(n string) []string {
		state[n] = onPath
		path = append(path, n)
		for _, next := range w[n] {
			switch state[next] {
			case onPath:
				for i, p := range path {
					if p == next {
						return append(append([]string(nil), path[i:]...), next)
					}
				}
			case unseen:
				if c := visit(next); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[n] = done
		return nil
	}
	for i := range steps {
		if n := StepName(steps, i); state[n] == unseen {
			if c := visit(n); c != nil {
				return c
			}
		}
	}
	return nil
}

// EntryStep is the first step (in order) that no other step feeds: where requests enter the pipeline.
func EntryStep(steps []inferencev1alpha1.Step, w Wiring) string {
	fed := map[string]bool{}
	for _, next := range w {
		for _, n := range next {
			fed[n] = true
		}
	}
	for i := range steps {
		if n := StepName(steps, i); !fed[n] {
			return n
		}
	}
	return ""
}

// SortedArgs renders args as --key=value, sorted by key, for a deterministic container command line.
func SortedArgs(args map[string]string) []string {
	keys := slices.Sorted(maps.Keys(args))
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, "--"+k+"="+args[k])
	}
	return out
}
