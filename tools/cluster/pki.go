package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// certValidity is long: the cluster is local and rebuilt at will; an expired certificate would only confuse.
const certValidity = 5 * 365 * 24 * time.Hour

// clientCert is one client identity: its file name, user name and groups (how RBAC sees it).
type clientCert struct {
	name, user string
	groups     []string
}

// clientCerts are the identities of the components and the admin. The kubelet's is system:node:<node> so the Node
// authorizer applies; kcm runs with per-controller service account credentials on top of its own.
func clientCerts(node string) []clientCert {
	return []clientCert{
		{"admin", "kubernetes-admin", []string{"system:masters"}},
		{"kcm", "system:kube-controller-manager", nil},
		{"scheduler", "system:kube-scheduler", nil},
		{"kube-proxy", "system:kube-proxy", nil},
		{"kubelet", "system:node:" + node, []string{"system:nodes"}},
		{"kwok", "keelson:kwok", []string{"system:masters"}},
		{"apiserver-kubelet-client", "kube-apiserver-kubelet-client", []string{"system:masters"}},
	}
}

// kubeconfigUsers are the client identities that get a kubeconfig.
var kubeconfigUsers = []string{"admin", "kcm", "scheduler", "kube-proxy", "kubelet", "kwok"}

// apiServerSANs are the names and addresses the apiserver's certificate must cover: the host, loopback, and the
// kubernetes Service by IP and by every DNS form pods use.
func apiServerSANs(s Settings) ([]string, []net.IP, error) {
	_, svc, err := net.ParseCIDR(s.ServiceCIDR)
	if err != nil {
		return nil, nil, fmt.Errorf("service CIDR %q: %w", s.ServiceCIDR, err)
	}
	first := slices.Clone(svc.IP.To4())
	first[3]++
	host := net.ParseIP(s.HostIP)
	if host == nil {
		return nil, nil, fmt.Errorf("host IP %q is not an IP address", s.HostIP)
	}
	return []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		[]net.IP{net.IPv4(127, 0, 0, 1), host, first}, nil
}

// PKICurrent says whether the PKI in dir was made for these settings: the apiserver's certificate covers the host
// IP and the kubelet's names the node. A changed host IP (a new machine, a new network) makes a new PKI.
func PKICurrent(dir string, s Settings) bool {
	api, err := readCert(filepath.Join(dir, "apiserver.crt"))
	if err != nil || time.Until(api.NotAfter) < 24*time.Hour {
		return false
	}
	if !slices.ContainsFunc(api.IPAddresses, func(ip net.IP) bool { return ip.Equal(net.ParseIP(s.HostIP)) }) {
		return false
	}
	kubelet, err := readCert(filepath.Join(dir, "kubelet.crt"))
	if err != nil || kubelet.Subject.CommonName != "system:node:"+s.NodeName {
		return false
	}
	for _, u := range kubeconfigUsers {
		if _, err := os.Stat(filepath.Join(dir, u+".kubeconfig")); err != nil {
			return false
		}
	}
	_, err = os.Stat(filepath.Join(dir, "sa.key"))
	return err == nil
}

func readCert(path string) (*x509.Certificate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New(path + ": no PEM block")
	}
	return x509.ParseCertificate(block.Bytes)
}

// issuer signs certificates.
type issuer struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newKey() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }

func serial() (*big.Int, error) { return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120)) }

// newCA makes a self-signed CA.
func newCA(cn string) (*issuer, []byte, []byte, error) {
	key, err := newKey()
	if err != nil {
		return nil, nil, nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, nil, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: sn, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(certValidity),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, err
	}
	cert, _ := x509.ParseCertificate(der)
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, nil, nil, err
	}
	return &issuer{cert: cert, key: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// issue signs a leaf certificate: a server certificate when it has SANs, a client certificate otherwise.
func (ca *issuer) issue(cn string, orgs, dns []string, ips []net.IP) (certPEM, keyPEM []byte, err error) {
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: sn, Subject: pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(certValidity),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		DNSNames: dns, IPAddresses: ips}
	if len(dns)+len(ips) > 0 {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = encodeKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, err
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// kubeconfig renders a self-contained kubeconfig (credentials inline, so it can be copied anywhere).
func kubeconfig(server string, ca, cert, key []byte) []byte {
	e := base64.StdEncoding.EncodeToString
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: keelson-local
  cluster: {server: %q, certificate-authority-data: %s}
users:
- name: keelson-local
  user: {client-certificate-data: %s, client-key-data: %s}
contexts:
- name: keelson-local
  context: {cluster: keelson-local, user: keelson-local}
current-context: keelson-local
`, server, e(ca), e(cert), e(key))
}

// WritePKI makes a new CA, the apiserver's serving certificate, every client certificate with its kubeconfig, and
// the service-account signing key, in dir. Files are written 0600: they hold cluster-admin credentials.
func WritePKI(dir string, s Settings) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	files := map[string][]byte{}
	ca, caPEM, caKey, err := newCA("keelson-local-ca")
	if err != nil {
		return err
	}
	files["ca.crt"], files["ca.key"] = caPEM, caKey
	dns, ips, err := apiServerSANs(s)
	if err != nil {
		return err
	}
	if files["apiserver.crt"], files["apiserver.key"], err = ca.issue("kube-apiserver", nil, dns, ips); err != nil {
		return err
	}
	for _, c := range clientCerts(s.NodeName) {
		if files[c.name+".crt"], files[c.name+".key"], err = ca.issue(c.user, c.groups, nil, nil); err != nil {
			return err
		}
	}
	for _, u := range kubeconfigUsers {
		files[u+".kubeconfig"] = kubeconfig(s.APIServer(), caPEM, files[u+".crt"], files[u+".key"])
	}
	sa, err := newKey()
	if err != nil {
		return err
	}
	if files["sa.key"], err = encodeKey(sa); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&sa.PublicKey)
	if err != nil {
		return err
	}
	files["sa.pub"] = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}
