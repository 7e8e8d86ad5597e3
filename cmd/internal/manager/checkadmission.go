package manager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/keelson-dev/keelson/cmd/internal/version"
	"github.com/keelson-dev/keelson/internal/admissioncheck"
)

// checkAdmissionTimeout bounds the two dry runs: each is one request, and the apiserver's own webhook timeout (at
// most 30 s) ends a call to a webhook that does not answer.
const checkAdmissionTimeout = time.Minute

// checkAdmission sends the binary's admission probe to namespace ns through the apiserver (--check-admission-
// namespace, run by helm test): it proves the apiserver reaches the binary's webhooks and the controller answers.
func checkAdmission(ctx context.Context, b Binary, ns string, labels map[string]string) error {
	if b.AdmissionProbe == nil {
		return errors.New("this binary serves no webhook to check")
	}
	c, err := oneShotClient(b.Name, b.AddToScheme...)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, checkAdmissionTimeout)
	defer cancel()
	return admissioncheck.Run(ctx, c, ns, labels, b.AdmissionProbe())
}

// oneShotClient is an uncached client, with the given API groups, for the binary's one-shot modes (the admission
// check, the release of finalizers): they run without a manager.
func oneShotClient(binary string, addToScheme ...func(*runtime.Scheme) error) (client.Client, error) {
	cfg, err := config.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.UserAgent = binary + "/" + version.Version
	scheme := runtime.NewScheme()
	for _, add := range addToScheme {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("registering API types: %w", err)
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("creating the client: %w", err)
	}
	return c, nil
}
