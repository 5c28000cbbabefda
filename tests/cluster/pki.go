package main

// Certificates and keys for the local cluster: one CA, the API server's serving
// certificate, an admin client certificate (system:masters) and the service-account
// signing key pair.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

type pki struct {
	dir string
}

func (p pki) path(name string) string { return filepath.Join(p.dir, name) }

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode)
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

// generate writes ca.{crt,key}, apiserver.{crt,key}, admin.{crt,key}, sa.{key,pub}.
func (p pki) generate() error {
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	start := time.Now().Add(-time.Hour)
	caTmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "inplace-local-ca"},
		NotBefore: start, NotAfter: start.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	caCert, _ := x509.ParseCertificate(caDER)
	if err := writePEM(p.path("ca.crt"), "CERTIFICATE", caDER, 0o644); err != nil {
		return err
	}
	caKeyDER, _ := x509.MarshalECPrivateKey(caKey)
	if err := writePEM(p.path("ca.key"), "EC PRIVATE KEY", caKeyDER, 0o600); err != nil {
		return err
	}
	leaf := func(name string, tmpl *x509.Certificate) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl.SerialNumber, tmpl.NotBefore, tmpl.NotAfter = serial(), start, start.Add(5*365*24*time.Hour)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		if err := writePEM(p.path(name+".crt"), "CERTIFICATE", der, 0o644); err != nil {
			return err
		}
		keyDER, _ := x509.MarshalECPrivateKey(key)
		return writePEM(p.path(name+".key"), "EC PRIVATE KEY", keyDER, 0o600)
	}
	if err := leaf("apiserver", &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")},
	}); err != nil {
		return err
	}
	if err := leaf("admin", &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kubernetes-admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	if err := writePEM(p.path("sa.key"), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey), 0o600); err != nil {
		return err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	return writePEM(p.path("sa.pub"), "PUBLIC KEY", pubDER, 0o644)
}

// kubeconfig writes an admin kubeconfig with the certificates embedded.
func (p pki) kubeconfig(path, server string) error {
	read := func(name string) (string, error) {
		b, err := os.ReadFile(p.path(name))
		return base64.StdEncoding.EncodeToString(b), err
	}
	ca, err := read("ca.crt")
	if err != nil {
		return err
	}
	crt, err := read("admin.crt")
	if err != nil {
		return err
	}
	key, err := read("admin.key")
	if err != nil {
		return err
	}
	content := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: inplace-local
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: inplace-local
  context:
    cluster: inplace-local
    user: admin
current-context: inplace-local
`, server, ca, crt, key)
	return os.WriteFile(path, []byte(content), 0o600)
}
