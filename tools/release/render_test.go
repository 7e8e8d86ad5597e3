package main

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// renderedImages renders chrt with vals as `helm install` would (client only) and returns the distinct images of
// every container it runs, sorted.
func renderedImages(t *testing.T, chrt *chart.Chart, vals map[string]any) []string {
	t.Helper()
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly, install.Replace = true, true, true
	install.ReleaseName, install.Namespace = "keelson", "keelson-system"
	install.KubeVersion = &chartutil.KubeVersion{Version: "v1.36.3", Major: "1", Minor: "36"}
	rel, err := install.Run(chrt, vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	manifest := rel.Manifest
	for _, h := range rel.Hooks {
		manifest += "\n---\n" + h.Manifest
	}
	var images []string
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		for _, path := range [][]string{{"spec", "template", "spec"}, {"spec"}} {
			for _, field := range []string{"containers", "initContainers"} {
				cs, _, _ := unstructured.NestedSlice(u.Object, append(path, field)...)
				for _, c := range cs {
					if img, ok := c.(map[string]any)["image"].(string); ok && !slices.Contains(images, img) {
						images = append(images, img)
					}
				}
			}
		}
	}
	slices.Sort(images)
	return images
}
