package webhookca

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"maps"
	"math/big"
	"time"
)

// Lifetimes of the self-signed webhook certificates, and how long before expiry each is replaced. They match what
// earlier releases issued, so an upgrade keeps the CA it finds.
const (
	CAValidity      = 10 * 365 * 24 * time.Hour
	ServingValidity = 365 * 24 * time.Hour
	RenewBefore     = 90 * 24 * time.Hour
	// backdate covers clocks a little behind the issuer's.
	backdate = time.Hour
)

// Keys of the certificate Secret.
const (
	SecretCACert = "ca.crt"
	SecretCAKey  = "ca.key"
	SecretCert   = "tls.crt"
	SecretKey    = "tls.key"
)

// IssuePlan says what a pass must issue into the certificate Secret.
type IssuePlan struct {
	NewCA      bool // a new CA, and so a new serving certificate signed by it
	NewServing bool // a new serving certificate signed by the Secret's CA
}

// PlanIssue decides from the Secret's data what to issue at now. A CA is replaced when it is missing, unreadable,
// not a CA, or expires within RenewBefore; the serving certificate when it is missing, unreadable, not signed by
// that CA, not for dnsName, or expires within RenewBefore. Keys of any type the standard library reads are kept
// (earlier releases wrote RSA keys).
func PlanIssue(data map[string][]byte, dnsName string, now time.Time) IssuePlan {
	ca, err := tls.X509KeyPair(data[SecretCACert], data[SecretCAKey])
	if err != nil || !ca.Leaf.IsCA || !validThrough(ca.Leaf, now, now.Add(RenewBefore)) {
		return IssuePlan{NewCA: true, NewServing: true}
	}
	cert, err := tls.X509KeyPair(data[SecretCert], data[SecretKey])
	if err != nil || !validThrough(cert.Leaf, now, now.Add(RenewBefore)) {
		return IssuePlan{NewServing: true}
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Leaf)
	if _, err := cert.Leaf.Verify(x509.VerifyOptions{DNSName: dnsName, Roots: roots, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return IssuePlan{NewServing: true}
	}
	return IssuePlan{}
}

// Issue returns a copy of the certificate Secret's data with what plan asks for issued at now: a new CA named caName
// (and so a new serving certificate), or a new serving certificate for dnsNames signed by the data's CA. The other
// keys are kept.
func Issue(data map[string][]byte, plan IssuePlan, caName string, dnsNames []string, now time.Time) (map[string][]byte, error) {
	out := maps.Clone(data)
	if out == nil {
		out = map[string][]byte{}
	}
	if plan.NewCA {
		cert, key, err := IssueCA(caName, now)
		if err != nil {
			return nil, err
		}
		out[SecretCACert], out[SecretCAKey] = cert, key
	}
	if plan.NewCA || plan.NewServing {
		cert, key, err := IssueServing(out[SecretCACert], out[SecretCAKey], dnsNames, now)
		if err != nil {
			return nil, err
		}
		out[SecretCert], out[SecretKey] = cert, key
	}
	return out, nil
}

// validThrough reports whether c is valid from from until through.
func validThrough(c *x509.Certificate, from, through time.Time) bool {
	return !from.Before(c.NotBefore) && !through.After(c.NotAfter)
}

// IssueCA returns a new self-signed CA named name, PEM-encoded, valid from now for CAValidity.
func IssueCA(name string, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating the CA key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: name, Organization: []string{"keelson"}},
		NotBefore: now.Add(-backdate), NotAfter: now.Add(CAValidity),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("signing the CA: %w", err)
	}
	return encodePair(der, key)
}

// IssueServing returns a serving certificate for dnsNames (the first is its subject) signed by the CA in
// caCertPEM/caKeyPEM, valid from now for ServingValidity, never beyond the CA.
func IssueServing(caCertPEM, caKeyPEM []byte, dnsNames []string, now time.Time) (certPEM, keyPEM []byte, err error) {
	ca, err := tls.X509KeyPair(caCertPEM, caKeyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the CA: %w", err)
	}
	signer, ok := ca.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("the CA key (%T) cannot sign", ca.PrivateKey)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating the serving key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, nil, err
	}
	notAfter := now.Add(ServingValidity)
	if notAfter.After(ca.Leaf.NotAfter) {
		notAfter = ca.Leaf.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: dnsNames[0]}, DNSNames: dnsNames,
		NotBefore: now.Add(-backdate), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Leaf, key.Public(), signer)
	if err != nil {
		return nil, nil, fmt.Errorf("signing the serving certificate: %w", err)
	}
	return encodePair(der, key)
}

// randomSerial is a 128-bit serial number: two CAs of one name must never share one, or clients mistake them.
func randomSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("drawing a serial number: %w", err)
	}
	return n, nil
}

func encodePair(der []byte, key *ecdsa.PrivateKey) (certPEM, keyPEM []byte, err error) {
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}
