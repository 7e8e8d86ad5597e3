// Command crddocs completes the generated CRDs' documentation: controller-gen writes the fields of embedded object
// metadata (a pod template's metadata, say) without descriptions, so `kubectl explain` would show them blank.
// `make manifests` runs it after controller-gen on every CRD file given as an argument, rewriting them in place.
package main

import (
	"fmt"
	"os"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// metadataDocs are the descriptions of the object metadata fields controller-gen emits for embedded objects,
// condensed from ObjectMeta's own documentation.
var metadataDocs = map[string]string{
	"name":        "Name of the object, unique within its namespace. Usually left empty in a template: the controller generates one.",
	"namespace":   "Namespace of the object. Usually left empty in a template: the object is created in its owner's namespace.",
	"labels":      "Labels: string keys and values to organise and select objects. More info: http://kubernetes.io/docs/user-guide/labels",
	"annotations": "Annotations: unstructured string keys and values that tools store on the object. More info: http://kubernetes.io/docs/user-guide/annotations",
	"finalizers":  "Finalizers that must be removed before the object is deleted. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/finalizers/",
}

// fill adds the missing metadata descriptions under s and reports how many it added.
func fill(s *apiextensionsv1.JSONSchemaProps) int {
	n := 0
	for name, p := range s.Properties {
		if name == "metadata" && p.Type == "object" {
			for field, doc := range metadataDocs {
				if fp, ok := p.Properties[field]; ok && fp.Description == "" {
					fp.Description = doc
					p.Properties[field] = fp
					n++
				}
			}
		}
		n += fill(&p)
		s.Properties[name] = p
	}
	if s.Items != nil && s.Items.Schema != nil {
		n += fill(s.Items.Schema)
	}
	return n
}

func run(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(b, &crd); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	added := 0
	for i := range crd.Spec.Versions {
		if v := crd.Spec.Versions[i].Schema; v != nil && v.OpenAPIV3Schema != nil {
			added += fill(v.OpenAPIV3Schema)
		}
	}
	if added == 0 {
		return nil
	}
	out, err := yaml.Marshal(&crd)
	if err != nil {
		return err
	}
	// Keep controller-gen's document marker so the file reads the same way.
	return os.WriteFile(path, append([]byte("---\n"), out...), 0o644)
}

func main() {
	for _, path := range os.Args[1:] {
		if err := run(path); err != nil {
			fmt.Fprintln(os.Stderr, "crddocs:", err)
			os.Exit(1)
		}
	}
}
