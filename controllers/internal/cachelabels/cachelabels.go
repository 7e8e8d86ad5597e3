// Package cachelabels builds the label selectors controllers use to narrow their informer caches to their own objects.
package cachelabels

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// Has selects objects that carry the label key, whatever its value: the children a controller labelled as its own.
func Has(key string) labels.Selector {
	req, err := labels.NewRequirement(key, selection.Exists, nil)
	if err != nil {
		panic(err) // key is a constant of the caller's; an invalid one is a programming error
	}
	return labels.NewSelector().Add(*req)
}
