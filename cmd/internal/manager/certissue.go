package manager

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
	"math/big"
	"time"
)

// Lifetimes of the self-signed webhook certificates, and how long before expiry each is replaced. They match what
// earlier releases issued, so an upgrade keeps the CA it finds.
const (
	caValidity      = 10 * 365 * 24 * time.Hour
	servingValidity = 365 * 24 * time.Hour
	renewBefore     = 90 * 24 * time.Hour
	// backdate covers clocks a little behind the issuer's.
	backdate = time.Hour
)

// Keys of the certificate Secret.
const (
	secretCACert = "ca.crt"
	secretCAKey  = "ca.key"
	secretCert   = "tls.crt"
	secretKey    = "tls.key"
)

// issuePlan says what a pass must issue into the certificate Secret.
type issuePlan struct {
	newCA      bool // a new CA, and so a new serving certificate signed by it
	newServing bool // a new serving certificate signed by the Secret's CA
}

// planIssue decides from the Secret's data what to issue at now. A CA is replaced when it is missing, unreadable,
// not a CA, or expires within renewBefore; the serving certificate when it is missing, unreadable, not signed by
// that CA, not for dnsName, or expires within renewBefore. Keys of any type the standard library reads are kept
// (earlier releases wrote RSA keys).
func planIssue(data map[string][]byte, dnsName string, now time.Time) issuePlan {
	ca, err := tls.X509KeyPair(data[secretCACert], data[secretCAKey])
	if err != nil || !ca.Leaf.IsCA || !validThrough(ca.Leaf, now, now.Add(renewBefore)) {
		return issuePlan{newCA: true, newServing: true}
	}
	cert, err := tls.X509KeyPair(data[secretCert], data[secretKey])
	if err != nil || !validThrough(cert.Leaf, now, now.Add(renewBefore)) {
		return issuePlan{newServing: true}
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Leaf)
	if _, err := cert.Leaf.Verify(x509.VerifyOptions{DNSName: dnsName, Roots: roots, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return issuePlan{newServing: true}
	}
	return issuePlan{}
}

// validThrough reports whether c is valid from from until through.
func validThrough(c *x509.Certificate, from, through time.Time) bool {
	return !from.Before(c.NotBefore) && !through.After(c.NotAfter)
}

// issueCA returns a new self-signed CA named name, PEM-encoded, valid from now for caValidity.
func issueCA(name string, now time.Time) (certPEM, keyPEM []byte, err error) {
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
		NotBefore: now.Add(-backdate), NotAfter: now.Add(caValidity),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("signing the CA: %w", err)
	}
	return encodePair(der, key)
}

// issueServing returns a serving certificate for dnsNames (the first is its subject) signed by the CA in
// caCertPEM/caKeyPEM, valid from now for servingValidity, never beyond the CA.
func issueServing(caCertPEM, caKeyPEM []byte, dnsNames []string, now time.Time) (certPEM, keyPEM []byte, err error) {
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
	notAfter := now.Add(servingValidity)
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
