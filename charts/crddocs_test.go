package charts_test

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// missingDocs lists the paths under prefix of every property without a description.
func missingDocs(prefix string, s *apiextensionsv1.JSONSchemaProps) []string {
	var out []string
	names := slices.Sorted(maps.Keys(s.Properties))
	for _, n := range names {
		p := s.Properties[n]
		path := prefix + "." + n
		// apiVersion, kind and metadata are documented by Kubernetes itself.
		if p.Description == "" && prefix != "" {
			out = append(out, path)
		}
		out = append(out, missingDocs(path, &p)...)
	}
	if s.Items != nil && s.Items.Schema != nil {
		out = append(out, missingDocs(prefix+"[]", s.Items.Schema)...)
	}
	return out
}

// Every field of every Keelson CRD carries a description, so `kubectl explain` documents all of it.
func TestEveryCRDFieldIsDocumented(t *testing.T) {
	files, err := filepath.Glob("keelson/files/crds/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no generated CRDs found (%v)", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, v := range crd.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				t.Fatalf("%s %s has no schema", crd.Name, v.Name)
			}
			root := v.Schema.OpenAPIV3Schema
			if root.Description == "" {
				t.Errorf("%s %s: the kind has no description", crd.Name, v.Name)
			}
			for _, top := range []string{"spec", "status"} {
				if p, ok := root.Properties[top]; ok {
					if p.Description == "" {
						t.Errorf("%s %s: .%s has no description", crd.Name, v.Name, top)
					}
					for _, path := range missingDocs(top, &p) {
						t.Errorf("%s %s: .%s has no description", crd.Name, v.Name, path)
					}
				}
			}
		}
	}
}
