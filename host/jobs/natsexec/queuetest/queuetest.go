// Package queuetest runs the NATS server of the deploy example for
// tests: [Start] embeds a nats-server configured by
// examples/deploy/nats-server.conf (TLS with a test CA, JetStream, the
// serve and worker nkeys and their permissions) plus users that stand in
// for attackers.
package queuetest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/agenthost/agenthost/host/jobs/natsexec"
)

// DialTimeout is how long a test's client waits to connect: the
// client's default (2 s) is too short under the race detector on a
// loaded 2-core machine.
const DialTimeout = 15 * time.Second

// Server is an embedded nats-server run from
// examples/deploy/nats-server.conf. Besides serve and the workers (nkeys)
// it has test users with passwords: intruder (every permission in
// agenthost's account: a stolen or too-broad credential without the
// shared key), outsider (in the account, allowed nothing of the queue)
// and stranger (in another account).
type Server struct {
	URL           string // tls://127.0.0.1:port, or nats:// when plain
	CA            string // the CA certificate file
	Serve, Worker string // the nkey seed files
	Dir           string // a folder of the server's files
	srv           *server.Server
}

// The test users and their passwords.
const (
	Intruder         = "intruder"
	IntruderPassword = "intruder-secret"
	Outsider         = "outsider"
	OutsiderPassword = "outsider-secret"
	Stranger         = "stranger"
	StrangerPassword = "stranger-secret"
)

// Start runs the deploy example's nats-server over TLS on a free
// loopback port until the test ends. It sets the environment variables
// the configuration reads (so tests using it do not run in parallel).
func Start(t testing.TB) *Server { return StartWith(t, false) }

// StartWith is Start; plain drops the TLS block (a loopback server).
func StartWith(t testing.TB, plain bool) *Server {
	t.Helper()
	dir := t.TempDir()
	ns := &Server{CA: filepath.Join(dir, "ca.crt"), Dir: dir}
	cert, key := writeCerts(t, dir, ns.CA)
	conf, err := os.ReadFile(filepath.Join(root(t), "examples", "deploy", "nats-server.conf"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer("/etc/nats/tls/server.crt", cert, "/etc/nats/tls/server.key", key).Replace(string(conf))
	confPath := filepath.Join(dir, "nats-server.conf")
	if err := os.WriteFile(confPath, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	ns.Serve = writeSeed(t, dir, "serve", "AGENTHOST_SERVE_NKEY")
	ns.Worker = writeSeed(t, dir, "worker", "AGENTHOST_WORKER_NKEY")
	opts, err := server.ProcessConfigFile(confPath)
	if err != nil {
		t.Fatal(err)
	}
	opts.Host, opts.Port, opts.StoreDir, opts.NoLog, opts.NoSigs = "127.0.0.1", -1, filepath.Join(dir, "js"), true, true
	if plain {
		opts.TLS, opts.TLSConfig = false, nil
	}
	var acc *server.Account
	for _, a := range opts.Accounts {
		if a.Name == "AGENTHOST" {
			acc = a
		}
	}
	if acc == nil {
		t.Fatal("queuetest: the example configuration has no AGENTHOST account")
	}
	other := server.NewAccount("OTHER")
	opts.Accounts = append(opts.Accounts, other)
	opts.Users = append(opts.Users,
		&server.User{Username: Intruder, Password: IntruderPassword, Account: acc},
		&server.User{Username: Outsider, Password: OutsiderPassword, Account: acc, Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: []string{"outsider.>"}},
			Subscribe: &server.SubjectPermission{Allow: []string{"outsider.>", "_INBOX.>"}},
		}},
		&server.User{Username: Stranger, Password: StrangerPassword, Account: other},
	)
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("queuetest: nats-server did not start")
	}
	t.Cleanup(s.Shutdown)
	ns.srv = s
	port := strconv.Itoa(s.Addr().(*net.TCPAddr).Port)
	ns.URL = "tls://127.0.0.1:" + port
	if plain {
		ns.URL = "nats://127.0.0.1:" + port
	}
	return ns
}

// root is the repository's folder (without host/hosttest, whose -update
// flag would clash with the CLI tests' own).
func root(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("queuetest: cannot locate the repository")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", "..", ".."))
}

// writeSeed makes an nkey user, writes its seed to a file and puts its
// public key in the environment variable the configuration reads.
func writeSeed(t testing.TB, dir, name, env string) string {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	pub, _ := kp.PublicKey()
	path := filepath.Join(dir, name+".nk")
	if err := os.WriteFile(path, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(env, pub)
	return path
}

// writeCerts makes a CA (written to caPath) and a server certificate for
// 127.0.0.1 and localhost signed by it.
func writeCerts(t testing.TB, dir, caPath string) (certPath, keyPath string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "agenthost test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "nats"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	certPath, keyPath = filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	for path, block := range map[string]*pem.Block{
		caPath:   {Type: "CERTIFICATE", Bytes: caDER},
		certPath: {Type: "CERTIFICATE", Bytes: der},
		keyPath:  {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return certPath, keyPath
}

// Role is how serve ("serve") or a worker ("worker") connects.
func (ns *Server) Role(role string) natsexec.ConnOptions {
	o := natsexec.ConnOptions{URL: ns.URL, Name: "test " + role, Timeout: DialTimeout}
	if strings.HasPrefix(ns.URL, "tls:") {
		o.CAFile = ns.CA
	}
	switch role {
	case "serve":
		o.NKeyFile, o.InboxPrefix = ns.Serve, natsexec.DispatcherInbox
	case "worker":
		o.NKeyFile, o.InboxPrefix = ns.Worker, natsexec.WorkerInbox
	default:
		panic("queuetest: no role " + role)
	}
	return o
}

// Connect connects as serve or a worker through natsexec.Connect until the
// test ends. The permissions of the example are enough for the role: a
// permission violation on the connection fails the test.
func (ns *Server) Connect(t testing.TB, role string) *nats.Conn {
	t.Helper()
	nc, err := natsexec.Connect(context.Background(), ns.Role(role))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var errs []error
	nc.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	})
	t.Cleanup(func() {
		nc.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, err := range errs {
			t.Errorf("queuetest: %s: %v", role, err)
		}
	})
	return nc
}

// User connects as a test user (Intruder, Outsider, Stranger) until the
// test ends; errs, when not nil, gets the server's asynchronous errors
// (permission violations).
func (ns *Server) User(t testing.TB, name, password string, errs chan<- error) *nats.Conn {
	t.Helper()
	opts := []nats.Option{nats.UserInfo(name, password), nats.Timeout(DialTimeout)}
	if strings.HasPrefix(ns.URL, "tls:") {
		opts = append(opts, nats.RootCAs(ns.CA))
	}
	if errs != nil {
		opts = append(opts, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case errs <- err:
			default:
			}
		}))
	}
	nc, err := nats.Connect(ns.URL, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Key is a fresh shared key.
func Key(t testing.TB) []byte {
	t.Helper()
	k := make([]byte, natsexec.MinKeyBytes)
	rand.Read(k)
	return k
}

// KeyFile writes a fresh shared key in hex to a file and returns its
// path.
func KeyFile(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "queue.key")
	k := Key(t)
	if err := os.WriteFile(path, []byte(hex.EncodeToString(k)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
