// Command image assembles a Keelson controller image without Docker or a registry, for this machine's
// architecture: an OCI image archive with one layer holding /tini (Debian's tini-static) and /<binary>, run as
// user 65532 with tini as PID 1 — the same layout the Dockerfile builds and `make release` pushes for every
// architecture. `ctr images import` loads the archive into a node's containerd.
//
//	bin/tools/image --binary bin/daemonset-controller --tini /usr/bin/tini-static \
//	    --ref docker.io/keelson/daemonset-controller:0.1.0 --out bin/images/daemonset-controller.tar
//
// Run it from the repository's root; make builds it into bin/tools/ (go -C tools build -o ../bin/tools/image ./image).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/keelson-dev/keelson/tools/internal/oci"
)

// hostPlatform is the platform of the binaries make build writes: this machine's.
var hostPlatform = v1.Platform{OS: "linux", Architecture: runtime.GOARCH}

// Build assembles the OCI image archive of binary (named name in the image) with tini as PID 1.
func Build(name string, binary, tini []byte, ref string) ([]byte, error) {
	img, err := oci.Controller(name, binary, tini, hostPlatform)
	if err != nil {
		return nil, err
	}
	return oci.Archive(ref, img)
}

// BuildPlain assembles the image of a binary that runs directly as PID 1, as user: the pause, CoreDNS and
// test images of the local cluster, which are not controllers.
func BuildPlain(name string, binary []byte, ref, user string) ([]byte, error) {
	img, err := oci.Plain(name, binary, user, hostPlatform)
	if err != nil {
		return nil, err
	}
	return oci.Archive(ref, img)
}

func run() error {
	binaryPath := flag.String("binary", "", "path of the binary (its base name names it in the image)")
	tiniPath := flag.String("tini", "/usr/bin/tini-static", "path of a static tini (Debian: apt-get install tini); empty: the binary is PID 1")
	user := flag.String("user", oci.User, "user of a plain image (--tini=''); controller images always run as "+oci.User)
	ref := flag.String("ref", "", "image reference, e.g. docker.io/keelson/daemonset-controller:0.1.0")
	out := flag.String("out", "", "where to write the OCI archive")
	flag.Parse()
	if *binaryPath == "" || *ref == "" || *out == "" {
		return fmt.Errorf("--binary, --ref and --out are required")
	}
	binary, err := os.ReadFile(*binaryPath)
	if err != nil {
		return err
	}
	name := filepath.Base(*binaryPath)
	var archive []byte
	if *tiniPath == "" {
		archive, err = BuildPlain(name, binary, *ref, *user)
	} else {
		tini, readErr := os.ReadFile(*tiniPath)
		if readErr != nil {
			return fmt.Errorf("%w (install Debian's tini package: apt-get install tini)", readErr)
		}
		archive, err = Build(name, binary, tini, *ref)
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(*out, archive, 0o644); err != nil {
		return err
	}
	_, err = fmt.Printf("%s: %s (%.1f MB)\n", *ref, *out, float64(len(archive))/1e6)
	return err
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}
