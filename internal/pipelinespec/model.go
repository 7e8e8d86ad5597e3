package pipelinespec

import (
	"fmt"
	"net/url"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ModelSource is how a step gets its model, which its form decides.
type ModelSource int

// Model sources.
const (
	// ModelOnStorage: a path on the pipeline's storage (nfs, pvc), or none (the whole share).
	ModelOnStorage ModelSource = iota
	// ModelOnClaim: pvc://claim/path, a directory of a claim of the namespace, mounted read-only.
	ModelOnClaim
	// ModelFetched: an http(s):// or s3:// URI, fetched into the cache on the step's node.
	ModelFetched
)

// ClaimScheme is the scheme of a model on a claim of the pipeline's namespace: pvc://claim/path.
const ClaimScheme = "pvc"

// IsURI reports whether a step's model is a URI rather than a path on the pipeline's storage.
func IsURI(model string) bool { return strings.Contains(model, "://") }

// SourceOf says how a step gets its model, from its form alone.
func SourceOf(model string) ModelSource {
	switch {
	case !IsURI(model):
		return ModelOnStorage
	case strings.HasPrefix(strings.ToLower(model), ClaimScheme+"://"):
		return ModelOnClaim
	}
	return ModelFetched
}

// ParseClaimModel reads a model pvc://claim/path: the claim's name and the directory below its root ("" for the
// whole claim). Its errors say what is wrong in words a user can act on.
func ParseClaimModel(model string) (claim, subPath string, err error) {
	u, err := url.Parse(model)
	if err != nil {
		return "", "", fmt.Errorf("not a URI: %w", err)
	}
	if u.Scheme != ClaimScheme {
		return "", "", fmt.Errorf("scheme %q: a claim's model is pvc://claim/path, lowercase", u.Scheme)
	}
	if u.User != nil || u.Port() != "" || u.RawQuery != "" || u.Fragment != "" {
		return "", "", fmt.Errorf("pvc://claim/path takes no user, port, query or fragment: a claim's content has no digest to pin")
	}
	claim = u.Hostname()
	if claim == "" {
		return "", "", fmt.Errorf("no claim: pvc://claim/path")
	}
	if msgs := validation.IsDNS1123Subdomain(claim); len(msgs) > 0 {
		return "", "", fmt.Errorf("claim %q: %s", claim, strings.Join(msgs, "; "))
	}
	subPath = strings.Trim(u.Path, "/")
	if err := CheckSubPath(subPath); err != nil {
		return "", "", err
	}
	return claim, subPath, nil
}

// CheckSubPath checks that a model's path stays inside the volume it is mounted from: relative, no ".." segment,
// no leading backslash (the kubelet refuses any other sub-path, so the step would never start).
func CheckSubPath(p string) error {
	if path.IsAbs(p) || strings.HasPrefix(p, "\\") {
		return fmt.Errorf("must be a path relative to the models storage, without a leading /")
	}
	for _, seg := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == ".." {
			return fmt.Errorf("must not contain a '..' segment: the model must stay inside its storage")
		}
	}
	return nil
}
