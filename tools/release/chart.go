package main

import (
	"context"
	"fmt"
	"io"
	"path"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/registry"
)

// pushChart packages the chart into work and pushes it to oci://<registry>/<repository>/charts, as `helm package`
// and `helm push` do; credentials come from `helm registry login` or, failing that, `docker login`. It returns
// the pushed chart by digest.
func (r Release) pushChart(ctx context.Context, work string) (name.Digest, error) {
	pkg := action.NewPackage()
	pkg.Destination = work
	tgz, err := pkg.Run(path.Join(r.Root, r.ChartDir), nil)
	if err != nil {
		return name.Digest{}, fmt.Errorf("package: %w", err)
	}
	opts := []registry.ClientOption{registry.ClientOptWriter(io.Discard)}
	if r.PlainHTTP {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	client, err := registry.NewClient(opts...)
	if err != nil {
		return name.Digest{}, err
	}
	push := action.NewPushWithOpts(action.WithPushConfig(&action.Configuration{RegistryClient: client}), action.WithPlainHTTP(r.PlainHTTP))
	push.Settings = cli.New()
	repo := fmt.Sprintf("%s/%s/charts", r.Registry, r.Repository)
	if _, err := push.Run(tgz, "oci://"+repo); err != nil {
		return name.Digest{}, fmt.Errorf("push: %w", err)
	}
	meta, err := chartMetadata(path.Join(r.Root, r.ChartDir))
	if err != nil {
		return name.Digest{}, err
	}
	// helm push reports the digest only as text: ask the registry for it.
	tag, err := name.NewTag(fmt.Sprintf("%s/%s:%s", repo, meta.Name, meta.Version), r.nameOptions()...)
	if err != nil {
		return name.Digest{}, err
	}
	desc, err := remote.Head(tag, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		return name.Digest{}, err
	}
	return tag.Context().Digest(desc.Digest.String()), nil
}
