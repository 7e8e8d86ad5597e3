package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/keelson-dev/keelson/tools/internal/oci"
)

// crossBuild compiles binary for platform into dir with the version stamped in. CGO is off, so Go cross-compiles
// without a C toolchain for the target.
func (r Release) crossBuild(ctx context.Context, dir, binary, version string, p v1.Platform) (string, error) {
	out := filepath.Join(dir, p.OS+"-"+p.Architecture, binary)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags(version, r.GitCommit, r.BuildDate),
		"-o", out, "./cmd/"+binary)
	cmd.Dir = r.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture, "GOARM=", "GOFLAGS=-buildvcs=false")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s for %s/%s: %w\n%s", binary, p.OS, p.Architecture, err, b)
	}
	return out, nil
}

// buildImage builds binary's image for every platform and their index, which ref's tag will name. It returns the
// index, its digest in ref's repository (the reference a chart can pin) and each platform's image.
func (r Release) buildImage(ctx context.Context, work, binary string, ref name.Tag) (v1.ImageIndex, name.Digest, []platformImage, error) {
	var images []v1.Image
	var platforms []platformImage
	for _, p := range r.Platforms {
		bin, err := r.crossBuild(ctx, work, binary, ref.TagStr(), p)
		if err != nil {
			return nil, name.Digest{}, nil, err
		}
		data, err := os.ReadFile(bin)
		if err != nil {
			return nil, name.Digest{}, nil, err
		}
		tini, err := os.ReadFile(r.Tini[p.Architecture])
		if err != nil {
			return nil, name.Digest{}, nil, err
		}
		img, err := oci.Controller(binary, data, tini, p)
		if err != nil {
			return nil, name.Digest{}, nil, err
		}
		d, err := img.Digest()
		if err != nil {
			return nil, name.Digest{}, nil, err
		}
		images = append(images, img)
		platforms = append(platforms, platformImage{Platform: p, Digest: ref.Context().Digest(d.String()), Binary: bin})
	}
	idx, err := oci.Index(images...)
	if err != nil {
		return nil, name.Digest{}, nil, err
	}
	d, err := idx.Digest()
	if err != nil {
		return nil, name.Digest{}, nil, err
	}
	return idx, ref.Context().Digest(d.String()), platforms, nil
}
