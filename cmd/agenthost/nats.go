package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/agenthost/agenthost/host/jobs/natsexec"
)

// The environment variables of the NATS flags: secrets stay out of the
// command line (process lists, shell history, unit files).
const (
	envNATSUser     = "AGENTHOST_NATS_USER"
	envNATSPassword = "AGENTHOST_NATS_PASSWORD"
	envNATSToken    = "AGENTHOST_NATS_TOKEN"
	envNATSKey      = "AGENTHOST_NATS_KEY"
)

// natsFlags are the flags serve --nats and worker share: the queue's
// NATS server, the credentials to connect with, and the shared key.
type natsFlags struct {
	url, creds, nkey, ca, cert, certKey, keyFile string
	insecureTest                                 bool
}

func (n *natsFlags) register(fs *flag.FlagSet, what string) {
	fs.StringVar(&n.url, "nats", "", what+" (tls://HOST:PORT; nats:// on loopback only). It must require credentials: --nats-creds, --nats-nkey, or $"+envNATSUser+" and $"+envNATSPassword+", or $"+envNATSToken)
	fs.StringVar(&n.creds, "nats-creds", "", "a NATS credentials `FILE` (.creds: a user JWT and its nkey seed)")
	fs.StringVar(&n.nkey, "nats-nkey", "", "a NATS nkey seed `FILE` (SU…)")
	fs.StringVar(&n.ca, "nats-ca", "", "the CA certificate `FILE` (PEM) that signs the NATS server's TLS certificate (default: the system's roots)")
	fs.StringVar(&n.cert, "nats-cert", "", "a client certificate `FILE` for mutual TLS with the NATS server (with --nats-cert-key)")
	fs.StringVar(&n.certKey, "nats-cert-key", "", "the `FILE` of --nats-cert's private key")
	fs.StringVar(&n.keyFile, "nats-key-file", "", "the queue's shared key `FILE` (32+ random bytes, raw or hex; the same for serve and every worker): it signs and encrypts every call and result; or $"+envNATSKey+" (hex)")
	fs.BoolVar(&n.insecureTest, "nats-insecure-test", false, "accept a NATS server that lets clients in without credentials, and plain text beyond loopback: for a private test server only")
}

// key reads the shared key from --nats-key-file or $AGENTHOST_NATS_KEY.
func (n natsFlags) key(e *env) ([]byte, error) {
	const howTo = "make one with `(umask 077; openssl rand -hex 32 > nats.key)` and give the same key to serve --nats and every worker"
	fromEnv := os.Getenv(envNATSKey)
	switch {
	case n.keyFile != "" && fromEnv != "":
		return nil, usageError{"give the queue's key once: --nats-key-file or $" + envNATSKey + ", not both"}
	case n.keyFile == "" && fromEnv == "":
		return nil, usageError{fmt.Sprintf("--nats needs the queue's shared key, which signs and encrypts every call and result: --nats-key-file FILE or $%s (hex), %d random bytes or more; %s", envNATSKey, natsexec.MinKeyBytes, howTo)}
	case fromEnv != "":
		k, err := natsexec.DecodeKey(fromEnv)
		if err != nil {
			return nil, usageError{fmt.Sprintf("$%s: %v; %s", envNATSKey, err, howTo)}
		}
		return k, nil
	}
	k, err := natsexec.LoadKey(n.keyFile)
	if err != nil {
		return nil, usageError{fmt.Sprintf("--nats-key-file: %v; %s", err, howTo)}
	}
	if fi, err := os.Stat(n.keyFile); err == nil && runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		fmt.Fprintf(e.messages(), "agenthost: warning: the queue's key %s is readable by other users (mode %04o): chmod 600 it\n", n.keyFile, fi.Mode().Perm())
	}
	return k, nil
}

// connect reads the shared key and connects to the NATS server as role
// ("serve" or "worker"); its errors say what the operator must
// configure.
func (n natsFlags) connect(ctx context.Context, e *env, role string) (*nats.Conn, []byte, error) {
	key, err := n.key(e)
	if err != nil {
		return nil, nil, err
	}
	o := natsexec.ConnOptions{
		URL: n.url, Name: "agenthost " + role,
		CredsFile: n.creds, NKeyFile: n.nkey, CAFile: n.ca, CertFile: n.cert, KeyFile: n.certKey,
		User: os.Getenv(envNATSUser), Password: os.Getenv(envNATSPassword), Token: os.Getenv(envNATSToken),
		InboxPrefix: natsexec.WorkerInbox, InsecureTest: n.insecureTest,
	}
	if role == "serve" {
		o.InboxPrefix = natsexec.DispatcherInbox
	}
	msg := e.messages()
	if n.insecureTest {
		fmt.Fprintln(msg, "agenthost: WARNING: --nats-insecure-test: a NATS server without authentication, or plain text beyond loopback, is accepted; anyone who reaches it could read every tenant's calls and results (they stay signed and encrypted). Never outside a private test")
	}
	if strings.Contains(n.url, "@") {
		fmt.Fprintf(msg, "agenthost: warning: --nats carries credentials, which show in process lists; prefer $%s and $%s, or --nats-nkey\n", envNATSUser, envNATSPassword)
	}
	nc, err := natsexec.Connect(ctx, o)
	if err == nil {
		return nc, key, nil
	}
	shown := natsexec.RedactURL(n.url)
	creds := fmt.Sprintf("--nats-creds FILE, --nats-nkey FILE, $%s and $%s, or $%s", envNATSUser, envNATSPassword, envNATSToken)
	switch {
	case errors.Is(err, natsexec.ErrPlainRemote):
		return nil, nil, usageError{fmt.Sprintf("--nats %s: a NATS server beyond loopback must be reached over TLS: use %s (with --nats-ca FILE when a private CA signs its certificate), and give the server a tls { cert_file, key_file } block (examples/deploy/nats-server.conf)", shown, tlsURL(shown))}
	case errors.Is(err, natsexec.ErrOpenServer):
		return nil, nil, usageError{fmt.Sprintf("--nats %s: the NATS server lets clients in without credentials, so anyone who reaches it could read every tenant's calls and run tools as any tenant. Turn on its authorization (users with nkeys and the permissions of docs/OPERATIONS.md, \"Securing the queue\"; examples/deploy/nats-server.conf; no no_auth_user) and give this process its credentials: %s. For a private test server only: --nats-insecure-test", shown, creds)}
	case errors.Is(err, natsexec.ErrRefused):
		given := "no credentials were given"
		switch {
		case n.creds != "":
			given = "--nats-creds " + n.creds
		case n.nkey != "":
			given = "--nats-nkey " + n.nkey
		case o.User != "":
			given = "the user $" + envNATSUser + "=" + o.User
		case o.Token != "":
			given = "$" + envNATSToken
		case strings.Contains(n.url, "@"):
			given = "the user in --nats"
		}
		return nil, nil, usageError{fmt.Sprintf("--nats %s: the NATS server refused this process's credentials (%s): give those of a user of the server's configuration: %s", shown, given, creds)}
	case errors.Is(err, natsexec.ErrCredentials):
		return nil, nil, usageError{fmt.Sprintf("--nats: %v: give one of %s", err, creds)}
	case strings.Contains(err.Error(), "certificate"):
		return nil, nil, usageError{fmt.Sprintf("--nats %s: %v: give the CA that signs the server's certificate with --nats-ca FILE", shown, err)}
	}
	return nil, nil, usageError{fmt.Sprintf("--nats %s: %v", shown, err)}
}

// tlsURL is a server list with nats:// and ws:// turned into tls:// and
// wss://.
func tlsURL(list string) string {
	parts := strings.Split(list, ",")
	for i, s := range parts {
		s = strings.TrimSpace(s)
		if !strings.Contains(s, "://") {
			s = "nats://" + s
		}
		if u, err := url.Parse(s); err == nil {
			switch u.Scheme {
			case "nats":
				u.Scheme = "tls"
			case "ws":
				u.Scheme = "wss"
			}
			s = u.String()
		}
		parts[i] = s
	}
	return strings.Join(parts, ",")
}
