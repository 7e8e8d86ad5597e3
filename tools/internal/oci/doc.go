// Package oci builds Keelson's images with go-containerregistry: single-layer images for one platform, the
// multi-platform index a release pushes, and the OCI archives the local cluster imports with `ctr images import`
// (the controller images, and the pause, CoreDNS and test images the local cluster needs). No Docker, no registry.
package oci
