package tracing

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"unicode"
)

// The OTLP exporter's own variables that FromEnv checks (the exporter reads them itself).
const (
	EnvHeaders                 = "OTEL_EXPORTER_OTLP_HEADERS"
	EnvTracesHeaders           = "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
	EnvTimeout                 = "OTEL_EXPORTER_OTLP_TIMEOUT"
	EnvTracesTimeout           = "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"
	EnvCompression             = "OTEL_EXPORTER_OTLP_COMPRESSION"
	EnvTracesCompression       = "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION"
	EnvCertificate             = "OTEL_EXPORTER_OTLP_CERTIFICATE"
	EnvTracesCertificate       = "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE"
	EnvClientCertificate       = "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"
	EnvClientKey               = "OTEL_EXPORTER_OTLP_CLIENT_KEY"
	EnvTracesClientCertificate = "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE"
	EnvTracesClientKey         = "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY"
)

// Samplers are the values OTEL_TRACES_SAMPLER takes (the SDK's; any case).
var Samplers = []string{"always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"}

const endpointReason = "an OTLP/HTTP endpoint is an http:// or https:// URL with a host, e.g. http://localhost:4318"

// CheckEnv checks the OTEL_* settings FromEnv honours, read through getenv, and returns the
// OTLP/HTTP traces URL and whether tracing is on. OTEL_SDK_DISABLED and OTEL_TRACES_EXPORTER
// are always checked (they turn it off); the others only when tracing is on — an endpoint
// is set, the SDK and the exporter not turned off. The first setting that cannot work is a
// *ConfigError naming the variable, the value as given (a URL's password masked; a
// header's never shown) and what it accepts. It reads the certificate files it names.
func CheckEnv(getenv func(string) string) (endpoint string, on bool, err error) {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	switch v := get(EnvDisabled); strings.ToLower(v) {
	case "true":
		return "", false, nil
	case "", "false":
	default:
		return "", false, &ConfigError{Variable: EnvDisabled, Value: v, Reason: "true (tracing off) or false"}
	}
	switch exp := get(EnvExporter); exp {
	case "", "otlp":
	case "none":
		return "", false, nil
	default:
		return "", false, &ConfigError{Variable: EnvExporter, Value: exp, Reason: "only otlp (over HTTP) or none is supported"}
	}
	traces, base := get(EnvTracesEndpoint), get(EnvEndpoint)
	if traces == "" && base == "" {
		return "", false, nil
	}
	// both are checked: the exporter reads the base one even when the traces one wins
	for _, v := range []string{EnvEndpoint, EnvTracesEndpoint} {
		if err := checkEndpoint(v, get(v)); err != nil {
			return "", false, err
		}
	}
	endpoint = traces
	if endpoint == "" {
		endpoint = strings.TrimRight(base, "/") + "/v1/traces"
	}
	for _, v := range []string{EnvProtocol, EnvBaseProtocol} {
		if p := get(v); p != "" && p != "http/protobuf" {
			return "", false, &ConfigError{Variable: v, Value: p, Reason: "only http/protobuf is supported (the collector's port 4318)"}
		}
	}
	for _, v := range []string{EnvHeaders, EnvTracesHeaders} {
		if err := checkHeaders(v, get(v)); err != nil {
			return "", false, err
		}
	}
	for _, v := range []string{EnvTimeout, EnvTracesTimeout} {
		if t := get(v); t != "" {
			if ms, err := strconv.Atoi(t); err != nil || ms < 0 {
				return "", false, &ConfigError{Variable: v, Value: t, Reason: "the export timeout is a whole number of milliseconds, 0 or more (e.g. 10000)"}
			}
		}
	}
	for _, v := range []string{EnvCompression, EnvTracesCompression} {
		if c := get(v); c != "" && c != "gzip" && c != "none" {
			return "", false, &ConfigError{Variable: v, Value: c, Reason: "the compression is gzip or none"}
		}
	}
	for _, v := range []string{EnvCertificate, EnvTracesCertificate} {
		if err := checkCertificate(v, get(v)); err != nil {
			return "", false, err
		}
	}
	for _, pair := range [][2]string{{EnvClientCertificate, EnvClientKey}, {EnvTracesClientCertificate, EnvTracesClientKey}} {
		if err := checkClientCertificate(pair[0], get(pair[0]), pair[1], get(pair[1])); err != nil {
			return "", false, err
		}
	}
	if err := checkResourceAttributes(get(EnvResourceAttributes)); err != nil {
		return "", false, err
	}
	if err := checkSampler(get(EnvSampler), get(EnvSamplerArg)); err != nil {
		return "", false, err
	}
	return endpoint, true, nil
}

// checkEndpoint refuses a set endpoint that is not an http(s) URL with a host, or that
// carries credentials (the exporter does not send them: they go in the headers).
func checkEndpoint(variable, v string) error {
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &ConfigError{Variable: variable, Value: Redact(v), Reason: endpointReason}
	}
	if u.User != nil {
		return &ConfigError{Variable: variable, Value: Redact(v), Reason: "credentials in the URL are not sent; give them as a header in " + EnvHeaders + " (e.g. Authorization=Basic%20…)"}
	}
	return nil
}

// Redact is v with the password of its URL's userinfo masked (url.URL.Redacted), also when v
// does not parse as a URL.
func Redact(v string) string {
	if u, err := url.Parse(v); err == nil && u.User != nil {
		return u.Redacted()
	}
	// not a URL with an authority (no scheme, a bad escape): mask what stands between the
	// start of the authority and its last '@'
	start := 0
	if i := strings.Index(v, "://"); i >= 0 {
		start = i + 3
	}
	end := len(v)
	if i := strings.IndexAny(v[start:], "/?#"); i >= 0 {
		end = start + i
	}
	at := strings.LastIndex(v[start:end], "@")
	if at < 0 {
		return v
	}
	info := v[start : start+at]
	if name, _, ok := strings.Cut(info, ":"); ok {
		return v[:start] + name + ":xxxxx" + v[start+at:]
	}
	return v
}

// checkHeaders checks a headers setting as the exporter parses it: name=value entries
// separated by commas, each name an HTTP token, each value percent-encoded. A header can
// hold a credential, so neither names nor values are quoted: the entry is named by number.
func checkHeaders(variable, v string) error {
	if v == "" {
		return nil
	}
	const form = "entries are name=value separated by commas, the values percent-encoded (e.g. Authorization=Bearer%20…)"
	for i, entry := range strings.Split(v, ",") {
		name, value, ok := strings.Cut(entry, "=")
		switch {
		case !ok:
			return &ConfigError{Variable: variable, Reason: fmt.Sprintf("entry %d has no '=': %s", i+1, form)}
		case !isToken(strings.TrimSpace(name)):
			return &ConfigError{Variable: variable, Reason: fmt.Sprintf("entry %d's name is not a valid header name: %s", i+1, form)}
		}
		if _, err := url.PathUnescape(value); err != nil {
			return &ConfigError{Variable: variable, Reason: fmt.Sprintf("entry %d's value is not valid percent-encoding: %s", i+1, form)}
		}
	}
	return nil
}

// isToken is an HTTP header name (RFC 9110 token), as the exporter accepts.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c > unicode.MaxASCII || !(unicode.IsLetter(c) || unicode.IsDigit(c) || strings.ContainsRune("!#$%&'*+-.^_`|~", c)) {
			return false
		}
	}
	return true
}

func checkCertificate(variable, path string) error {
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return &ConfigError{Variable: variable, Value: path, Reason: "the CA certificate file cannot be read: " + readError(err)}
	}
	if !x509.NewCertPool().AppendCertsFromPEM(b) {
		return &ConfigError{Variable: variable, Value: path, Reason: "the file holds no PEM certificate"}
	}
	return nil
}

// checkClientCertificate checks a client certificate and its key, given together or not
// at all (the exporter ignores one without the other).
func checkClientCertificate(certVar, cert, keyVar, key string) error {
	switch {
	case cert == "" && key == "":
		return nil
	case key == "":
		return &ConfigError{Variable: certVar, Value: cert, Reason: "a client certificate needs its key in " + keyVar}
	case cert == "":
		return &ConfigError{Variable: keyVar, Value: key, Reason: "a client key needs its certificate in " + certVar}
	}
	c, err := os.ReadFile(cert)
	if err != nil {
		return &ConfigError{Variable: certVar, Value: cert, Reason: "the client certificate file cannot be read: " + readError(err)}
	}
	k, err := os.ReadFile(key)
	if err != nil {
		return &ConfigError{Variable: keyVar, Value: key, Reason: "the client key file cannot be read: " + readError(err)}
	}
	if _, err := tls.X509KeyPair(c, k); err != nil {
		return &ConfigError{Variable: certVar, Value: cert, Reason: "the certificate and the key in " + keyVar + " are not a PEM key pair"}
	}
	return nil
}

// readError is why a file could not be read, without its path (the message names it).
func readError(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err.Error()
	}
	return err.Error()
}

// checkResourceAttributes checks key=value entries separated by commas, the values
// percent-encoded (the SDK's resource from the environment).
func checkResourceAttributes(v string) error {
	if v == "" {
		return nil
	}
	const form = "entries are key=value separated by commas, the values percent-encoded (e.g. deployment.environment=dev,team=desk)"
	for i, entry := range strings.Split(v, ",") {
		key, value, ok := strings.Cut(entry, "=")
		switch {
		case !ok || strings.TrimSpace(key) == "":
			return &ConfigError{Variable: EnvResourceAttributes, Value: v, Reason: fmt.Sprintf("entry %d is not key=value: %s", i+1, form)}
		}
		if _, err := url.PathUnescape(strings.TrimSpace(value)); err != nil {
			return &ConfigError{Variable: EnvResourceAttributes, Value: v, Reason: fmt.Sprintf("the value of %q is not valid percent-encoding: %s", strings.TrimSpace(key), form)}
		}
	}
	return nil
}

// checkSampler checks the sampler and, for the two that take it, its ratio.
func checkSampler(sampler, arg string) error {
	if sampler == "" {
		return nil
	}
	s := strings.ToLower(sampler)
	known := false
	for _, k := range Samplers {
		known = known || s == k
	}
	if !known {
		return &ConfigError{Variable: EnvSampler, Value: sampler, Reason: "the sampler is one of " + strings.Join(Samplers, ", ")}
	}
	if arg == "" || !strings.HasSuffix(s, "traceidratio") {
		return nil
	}
	if r, err := strconv.ParseFloat(arg, 64); err != nil || r < 0 || r > 1 {
		return &ConfigError{Variable: EnvSamplerArg, Value: arg, Reason: "the " + s + " sampler's ratio: a number from 0 to 1 (e.g. 0.25)"}
	}
	return nil
}
