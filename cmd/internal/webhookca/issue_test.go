package webhookca

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/keelson-dev/keelson/cmd/internal/webhookca/webhookcatest"
)

const day = 24 * time.Hour

var testDNSNames = webhookcatest.DNSNames

// certData is a Secret's data with a CA issued at caIssued and a serving certificate for dnsNames issued at
// certIssued.
func certData(t *testing.T, caIssued, certIssued time.Time, dnsNames ...string) map[string][]byte {
	t.Helper()
	caCert, caKey, err := IssueCA("test-ca", caIssued)
	if err != nil {
		t.Fatal(err)
	}
	crt, key, err := IssueServing(caCert, caKey, dnsNames, certIssued)
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{SecretCACert: caCert, SecretCAKey: caKey, SecretCert: crt, SecretKey: key}
}

// rsaCAData is a CA as earlier releases wrote it (RSA, PKCS #1) with a serving certificate it signed.
func rsaCAData(t *testing.T, now time.Time) map[string][]byte {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(0), Subject: pkix.Name{CommonName: "old-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(CAValidity), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	caCert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	caKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	crt, k, err := IssueServing(caCert, caKey, testDNSNames, now)
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{SecretCACert: caCert, SecretCAKey: caKey, SecretCert: crt, SecretKey: k}
}

func TestPlanIssue(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	valid := certData(t, now, now, testDNSNames...)
	otherCA := certData(t, now, now, testDNSNames...)
	mixed := map[string][]byte{SecretCACert: valid[SecretCACert], SecretCAKey: valid[SecretCAKey],
		SecretCert: otherCA[SecretCert], SecretKey: otherCA[SecretKey]}
	for name, tc := range map[string]struct {
		data map[string][]byte
		want IssuePlan
	}{
		"empty Secret":                       {nil, IssuePlan{NewCA: true, NewServing: true}},
		"valid":                              {valid, IssuePlan{}},
		"RSA CA of earlier releases is kept": {rsaCAData(t, now), IssuePlan{}},
		"CA expires within renewBefore": {certData(t, now.Add(-CAValidity+RenewBefore-day), now, testDNSNames...),
			IssuePlan{NewCA: true, NewServing: true}},
		"CA garbage": {map[string][]byte{SecretCACert: []byte("x"), SecretCAKey: []byte("y"),
			SecretCert: valid[SecretCert], SecretKey: valid[SecretKey]}, IssuePlan{NewCA: true, NewServing: true}},
		"serving certificate missing": {map[string][]byte{SecretCACert: valid[SecretCACert], SecretCAKey: valid[SecretCAKey]},
			IssuePlan{NewServing: true}},
		"serving certificate expires within renewBefore": {certData(t, now, now.Add(-ServingValidity+RenewBefore-day), testDNSNames...),
			IssuePlan{NewServing: true}},
		"serving certificate for another name": {certData(t, now, now, "other.ns.svc"), IssuePlan{NewServing: true}},
		"serving certificate of another CA":    {mixed, IssuePlan{NewServing: true}},
	} {
		if got := PlanIssue(tc.data, testDNSNames[0], now); got != tc.want {
			t.Errorf("%s: %+v, want %+v", name, got, tc.want)
		}
	}
}

// An issued pair is what planIssue accepts, so a pass that issued leaves the next one nothing to do.
func TestIssuedCertificatesNeedNothingMore(t *testing.T) {
	now := time.Now()
	data := certData(t, now, now, testDNSNames...)
	if got := PlanIssue(data, testDNSNames[0], now); got != (IssuePlan{}) {
		t.Fatalf("freshly issued certificates planned %+v", got)
	}
	// A serving certificate never outlives its CA.
	data = certData(t, now.Add(-CAValidity+30*day), now, testDNSNames...)
	crt, _ := pem.Decode(data[SecretCert])
	ca, _ := pem.Decode(data[SecretCACert])
	leaf, _ := x509.ParseCertificate(crt.Bytes)
	root, _ := x509.ParseCertificate(ca.Bytes)
	if leaf.NotAfter.After(root.NotAfter) {
		t.Fatalf("serving certificate until %s outlives its CA until %s", leaf.NotAfter, root.NotAfter)
	}
}
