package oci

import (
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The controller images' layout, shared with the Dockerfile (tools/image/image_test.go checks it).
const (
	// TiniPath is where tini sits in the image.
	TiniPath = "/tini"
	// User runs the controller: non-root, the same UID and GID as distroless' nonroot.
	User = "65532:65532"
)

// Entrypoint is a controller image's entrypoint: tini as PID 1 (it reaps zombies and forwards signals, so SIGTERM
// reaches the controller and a graceful shutdown releases the leader lease), then the controller.
func Entrypoint(binary string) []string { return []string{TiniPath, "--", "/" + binary} }

// Controller returns the image of a controller binary (named name in the image) for platform: /tini and
// /<name> in one layer, run as User with tini as PID 1. binary and tini must both be built for platform.
func Controller(name string, binary, tini []byte, platform v1.Platform) (v1.Image, error) {
	return Image([]File{
		{Path: TiniPath, Mode: 0o755, Data: tini},
		{Path: name, Mode: 0o755, Data: binary},
	}, Config{
		User:       User,
		Entrypoint: Entrypoint(name),
		Labels:     map[string]string{"org.opencontainers.image.title": name, "org.opencontainers.image.source": "https://github.com/keelson-dev/keelson"},
	}, platform)
}

// Plain returns the image of a binary that runs directly as PID 1, as user: the pause, CoreDNS and test images
// of the local cluster, which are not controllers.
func Plain(name string, binary []byte, user string, platform v1.Platform) (v1.Image, error) {
	return Image([]File{{Path: name, Mode: 0o755, Data: binary}}, Config{User: user, Entrypoint: []string{"/" + name}}, platform)
}
