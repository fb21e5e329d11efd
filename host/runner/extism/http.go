package extism

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/internal/netguard"
)

// httpDoer is the part of *http.Client the host function uses.
type httpDoer interface {
	Do(*http.Request) (*http.Response, error)
}

// httpRequestJSON is the request a plugin passes to http_request, as the
// Extism PDKs encode it.
type httpRequestJSON struct {
	URL     string            `json:"url"`
	Method  string            `json:"method"`
	Headers map[string]string `json:"headers"`
}

// allowedMethods are the methods http_request may use.
var allowedMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

// httpRequest implements http_request under the grant: the request and
// every redirect hop go through a netguard.Guard built from the call's
// grant. A refusal, a cap or a network failure traps the plugin, as
// upstream Extism hosts do; the call then fails with PERMISSION_DENIED,
// OUTPUT_LIMIT, TIMEOUT or TOOL_ERROR naming the host.
func (in *instance) httpRequest(ctx context.Context, reqOff, bodyOff uint64) uint64 {
	in.httpStatus = 0
	in.httpHeaders = map[string]string{}
	raw := in.k.bytesAt(reqOff)
	in.k.free(reqOff)
	var r httpRequestJSON
	if err := json.Unmarshal(raw, &r); err != nil {
		in.fail(abi.Errorf(abi.CodeToolError, "http_request: invalid request JSON: %s", err.Error()))
	}
	method := strings.ToUpper(r.Method)
	if method == "" {
		method = http.MethodGet
	}
	if !allowedMethods[method] {
		in.fail(abi.Errorf(abi.CodeToolError, "http_request: method %q is not supported", r.Method))
	}
	u, err := url.Parse(r.URL)
	if err != nil {
		in.fail(abi.Errorf(abi.CodeToolError, "http_request: invalid url %q: %s", r.URL, err.Error()))
	}
	var body io.Reader
	if bodyOff != 0 {
		body = bytes.NewReader(in.k.bytesAt(bodyOff))
		in.k.free(bodyOff)
	}
	if in.guard == nil {
		in.guard = netguard.ForGrant(in.p.grant, netguard.Options{
			Resolver:         in.p.r.resolver,
			Dial:             in.p.r.dial,
			MaxResponseBytes: in.p.maxHTTP,
			Timeout:          in.p.r.opts.HTTPTimeout,
			Logger:           in.p.log,
		})
		in.client = in.guard.Client()
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		in.fail(abi.Errorf(abi.CodeToolError, "http_request: %s", err.Error()))
	}
	for k, v := range r.Headers {
		req.Header.Set(k, v)
	}
	resp, err := in.client.Do(req)
	if err != nil {
		in.httpFail(err, u)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		in.httpFail(err, u)
	}
	in.httpStatus = int32(resp.StatusCode)
	for k, v := range resp.Header {
		in.httpHeaders[strings.ToLower(k)] = strings.Join(v, ",")
	}
	return in.k.write(data)
}

// httpFail traps the plugin with the error of a failed request.
func (in *instance) httpFail(err error, u *url.URL) {
	ae := in.guard.Error(err, u)
	if ae == nil {
		ae = abi.Errorf(abi.CodeToolError, "http_request to %s failed: %s", u.Host, err.Error())
	}
	if ae.Code == abi.CodePermissionDenied {
		in.logs.Add("agenthost: " + ae.Message)
	}
	in.fail(ae)
}
