package manager

import (
	"testing"
	"time"

	"github.com/keelson-dev/keelson/cmd/internal/webhookca"
)

const day = 24 * time.Hour

// certData is a certificate Secret's data with a CA issued at caIssued and a serving certificate for dnsNames
// issued at certIssued, as the certificate pass writes it.
func certData(t *testing.T, caIssued, certIssued time.Time, dnsNames ...string) map[string][]byte {
	t.Helper()
	data, err := webhookca.Issue(nil, webhookca.IssuePlan{NewCA: true}, "test-ca", dnsNames, caIssued)
	if err == nil {
		data, err = webhookca.Issue(data, webhookca.IssuePlan{NewServing: true}, "test-ca", dnsNames, certIssued)
	}
	if err != nil {
		t.Fatal(err)
	}
	return data
}
