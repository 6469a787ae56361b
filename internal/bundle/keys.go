package bundle

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Key files are PEM: the private key as PKCS #8 ("PRIVATE KEY"), the public
// key as PKIX ("PUBLIC KEY"). These are the standard encodings of ed25519
// keys (RFC 8410), so OpenSSL reads them too — `openssl pkey -in KEY -pubout`
// prints KEY.pub, and docs/bundle.md verifies a bundle with openssl alone —
// and an operator can keep the private key in whatever tooling already
// holds their PEM keys.
const (
	privatePEMType = "PRIVATE KEY"
	publicPEMType  = "PUBLIC KEY"
)

// KeyID names a public key: "sha256:" and the first 16 hex digits of the
// sha256 of its PKIX encoding. It is printed by keygen, create and verify so
// a person can tell keys apart; the signature check itself uses the whole
// key, never the id.
func KeyID(pub ed25519.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "invalid-key"
	}
	sum := sha256.Sum256(der)
	return "sha256:" + hexSum(sum[:8])
}

// GenerateKey writes a new ed25519 key pair: the private key to path (mode
// 0600) and the public key to path+".pub" (0644). It refuses to overwrite
// either file unless force is set, since overwriting a signing key orphans
// every bundle signed with it. It returns the public key.
func GenerateKey(path string, force bool) (ed25519.PublicKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("keygen: %w", err)
	}
	privDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("keygen: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("keygen: %w", err)
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	for _, f := range []struct {
		path string
		mode fs.FileMode
		typ  string
		der  []byte
	}{
		{path, 0o600, privatePEMType, privDER},
		{path + ".pub", 0o644, publicPEMType, pubDER},
	} {
		if err := writePEM(f.path, flags, f.mode, f.typ, f.der); err != nil {
			return nil, fmt.Errorf("keygen: %w", err)
		}
	}
	return pub, nil
}

func writePEM(path string, flags int, mode fs.FileMode, typ string, der []byte) error {
	fh, err := os.OpenFile(path, flags, mode)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists (give --force to replace it, which orphans the bundles signed with it)", path)
	}
	if err != nil {
		return err
	}
	// OpenFile's mode applies only to new files (and through the umask).
	if err := fh.Chmod(mode); err != nil {
		fh.Close()
		return err
	}
	if err := pem.Encode(fh, &pem.Block{Type: typ, Bytes: der}); err != nil {
		fh.Close()
		return err
	}
	if err := fh.Sync(); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

// LoadPrivateKey reads an ed25519 private key written by [GenerateKey] (or
// `openssl genpkey -algorithm ed25519`).
func LoadPrivateKey(path string) (ed25519.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("private key: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, fmt.Errorf("private key %s: not a PEM file", path)
	}
	if block.Type != privatePEMType {
		return nil, fmt.Errorf("private key %s: a %q PEM block, want %q (did you give the .pub file?)", path, block.Type, privatePEMType)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("private key %s: %w", path, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("private key %s: a %T, want an ed25519 key", path, k)
	}
	return priv, nil
}

// LoadPublicKey reads an ed25519 public key written by [GenerateKey] (or
// `openssl pkey -pubout`).
func LoadPublicKey(path string) (ed25519.PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	return ParsePublicKey(b)
}

// ParsePublicKey decodes a PEM "PUBLIC KEY" holding an ed25519 key.
func ParsePublicKey(b []byte) (ed25519.PublicKey, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("public key: not a PEM file")
	}
	if block.Type != publicPEMType {
		return nil, fmt.Errorf("public key: a %q PEM block, want %q", block.Type, publicPEMType)
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("public key: a %T, want an ed25519 key", k)
	}
	return pub, nil
}
