package natsexec

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// ConnOptions say how to reach the NATS server and as whom.
type ConnOptions struct {
	// URL is the server, or several separated by commas: tls:// (or
	// wss://) anywhere, nats:// (or ws://) on a loopback address only. A
	// user name and password (or a token) in it are accepted but show in
	// process lists: prefer User and Password.
	URL string
	// Name is this client's name on the server (its monitoring pages).
	Name string
	// Credentials, one kind at most: a .creds file (a user JWT and its
	// nkey seed), an nkey seed file, a user and password, or a token. A
	// client certificate (CertFile) counts as one too (the server's
	// verify_and_map).
	CredsFile, NKeyFile string
	User, Password      string
	Token               string
	// CAFile holds the PEM certificates that sign the server's TLS
	// certificate (default: the system's roots).
	CAFile string
	// CertFile and KeyFile are a client certificate for mutual TLS.
	CertFile, KeyFile string
	// InboxPrefix is the prefix of this client's reply subjects
	// (DispatcherInbox, WorkerInbox; default _INBOX).
	InboxPrefix string
	// InsecureTest accepts a server that lets clients in without
	// credentials, and plain text beyond loopback: for a private test
	// server only.
	InsecureTest bool
	// Timeout bounds the connection (10 s when 0, or ctx's deadline).
	Timeout time.Duration
}

// Errors of Connect, for the CLI to turn into what to configure.
var (
	// ErrOpenServer is a server that let this client in without
	// credentials, or says it requires none.
	ErrOpenServer = errors.New("queue: the NATS server lets clients in without credentials")
	// ErrPlainRemote is a nats:// or ws:// URL to a host that is not a
	// loopback address.
	ErrPlainRemote = errors.New("queue: a NATS server beyond loopback must be reached over TLS")
	// ErrRefused is a server that refused this client's credentials.
	ErrRefused = errors.New("queue: the NATS server refused the credentials")
	// ErrCredentials is options that give more than one kind of
	// credentials, or half of one.
	ErrCredentials = errors.New("queue: NATS credentials")
)

// Connect checks o and connects. Beyond loopback it requires TLS (a
// tls:// URL; the client then requires TLS of every server it reconnects
// to); on loopback in plain text it ignores the servers a cluster
// advertises, which may not be local. Once connected it refuses a server
// that admitted it without credentials or says it needs none
// (ErrOpenServer), unless InsecureTest.
func Connect(ctx context.Context, o ConnOptions) (*nats.Conn, error) {
	urls, plain, err := checkURLs(o.URL)
	if err != nil {
		return nil, err
	}
	if plain > 0 && !o.InsecureTest {
		return nil, fmt.Errorf("%w: %s", ErrPlainRemote, RedactURL(o.URL))
	}
	opts := []nats.Option{nats.Name(o.Name)}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	opts = append(opts, nats.Timeout(timeout))
	if o.InboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(o.InboxPrefix))
	}
	secure := false
	for _, u := range urls {
		if u.Scheme == "tls" || u.Scheme == "wss" {
			secure = true
		}
	}
	if secure || o.CAFile != "" || o.CertFile != "" {
		opts = append(opts, nats.Secure(&tls.Config{MinVersion: tls.VersionTLS12}))
		secure = true
	}
	if o.CAFile != "" {
		opts = append(opts, nats.RootCAs(o.CAFile))
	}
	if (o.CertFile != "") != (o.KeyFile != "") {
		return nil, fmt.Errorf("%w: a client certificate needs both its certificate and its key file", ErrCredentials)
	}
	if o.CertFile != "" {
		opts = append(opts, nats.ClientCert(o.CertFile, o.KeyFile))
	}
	if !secure {
		opts = append(opts, nats.IgnoreDiscoveredServers())
	}
	kinds := 0
	for _, u := range urls {
		if u.User != nil {
			kinds++
			break
		}
	}
	if o.Password != "" && o.User == "" {
		return nil, fmt.Errorf("%w: a password needs a user name", ErrCredentials)
	}
	if o.User != "" && o.Password == "" {
		return nil, fmt.Errorf("%w: the user %q needs a password", ErrCredentials, o.User)
	}
	if o.User != "" {
		kinds++
		opts = append(opts, nats.UserInfo(o.User, o.Password))
	}
	if o.Token != "" {
		kinds++
		opts = append(opts, nats.Token(o.Token))
	}
	if o.CredsFile != "" {
		kinds++
		opts = append(opts, nats.UserCredentials(o.CredsFile))
	}
	if o.NKeyFile != "" {
		kinds++
		nk, err := nats.NkeyOptionFromSeed(o.NKeyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: nkey seed %s: %w", ErrCredentials, o.NKeyFile, err)
		}
		opts = append(opts, nk)
	}
	if kinds > 1 {
		return nil, fmt.Errorf("%w: give one kind of credentials, not %d", ErrCredentials, kinds)
	}
	if o.CertFile != "" {
		kinds++
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	nc, err := nats.Connect(o.URL, opts...)
	if err != nil {
		if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked) {
			return nil, fmt.Errorf("%w: %w", ErrRefused, err)
		}
		return nil, fmt.Errorf("queue: connect to %s: %w", RedactURL(o.URL), err)
	}
	if (kinds == 0 || !nc.AuthRequired()) && !o.InsecureTest {
		nc.Close()
		return nil, fmt.Errorf("%w (%s)", ErrOpenServer, RedactURL(o.URL))
	}
	return nc, nil
}

// checkURLs parses a server list and counts the plain-text URLs to hosts
// beyond loopback.
func checkURLs(list string) ([]*url.URL, int, error) {
	var urls []*url.URL
	plain := 0
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, "://") {
			s = "nats://" + s
		}
		u, err := url.Parse(s)
		if err != nil {
			return nil, 0, fmt.Errorf("queue: the NATS URL %s: %w", RedactURL(s), errors.Unwrap(err))
		}
		switch u.Scheme {
		case "nats", "ws":
			if !isLoopback(u.Hostname()) {
				plain++
			}
		case "tls", "wss":
		default:
			return nil, 0, fmt.Errorf("queue: the NATS URL %s: the scheme must be tls, wss, nats or ws", RedactURL(s))
		}
		urls = append(urls, u)
	}
	if len(urls) == 0 {
		return nil, 0, errors.New("queue: no NATS URL")
	}
	return urls, plain, nil
}

// isLoopback reports localhost or a loopback IP address (a name is not
// resolved: only these are known to stay on the machine).
func isLoopback(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// RedactURL hides the user information (a password, a token) of each URL
// in a server list, for messages and logs.
func RedactURL(list string) string {
	parts := strings.Split(list, ",")
	for i, s := range parts {
		if at := strings.LastIndex(s, "@"); at >= 0 {
			start := 0
			if k := strings.Index(s, "://"); k >= 0 && k < at {
				start = k + 3
			}
			parts[i] = s[:start] + "REDACTED" + s[at:]
		}
	}
	return strings.Join(parts, ",")
}
