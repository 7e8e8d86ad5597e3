package oci

import (
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Config is the part of the image configuration a container runtime reads.
type Config struct {
	// User runs the entrypoint, "uid:gid"; empty means root.
	User string
	// Entrypoint is the command the container runs.
	Entrypoint []string
	// Env holds KEY=value pairs; PATH=/ when empty.
	Env []string
	// Labels annotate the image.
	Labels map[string]string
}

// Image returns the OCI image of files in one layer, configured by cfg, for platform (whose binaries files must
// hold: nothing here can check that).
func Image(files []File, cfg Config, platform v1.Platform) (v1.Image, error) {
	layer, err := Layer(files)
	if err != nil {
		return nil, err
	}
	env := cfg.Env
	if len(env) == 0 {
		env = []string{"PATH=/"}
	}
	created := v1.Time{Time: epoch}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: platform.Architecture,
		Variant:      platform.Variant,
		OS:           platform.OS,
		Created:      created,
		Config:       v1.Config{User: cfg.User, Entrypoint: cfg.Entrypoint, Env: env, WorkingDir: "/", Labels: cfg.Labels},
		RootFS:       v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, err
	}
	return mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: types.OCILayer,
		History: v1.History{Created: created, CreatedBy: "keelson tools/internal/oci"}})
}

// Index returns the OCI image index of images, each listed under the platform its config names, in the order
// given: what a registry serves under one tag so that every node pulls the image of its own architecture.
func Index(images ...v1.Image) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, img := range images {
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		if cf.OS == "" || cf.Architecture == "" {
			return nil, fmt.Errorf("an image without a platform cannot join an index")
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			MediaType: types.OCIManifestSchema1,
			Platform:  &v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant},
		}})
	}
	return idx, nil
}
