package exporter

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/numascope/numascope/internal/testutil"
)

// serve starts x on a free loopback port with the web configuration file
// (may be "") and returns its base URL.
func serve(t *testing.T, x *Exporter, webConfig string) string {
	t.Helper()
	srv, err := x.Listen(ServeConfig{Listen: "127.0.0.1:0", WebConfigFile: webConfig})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + srv.Addr().String()
}

// status GETs url with the basic auth user and password (none when user is
// "") and returns the status and body.
func status(t *testing.T, url, user, pass string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	return testutil.Get(t, req)
}

// TestWebConfigBasicAuth serves with exporter-toolkit's web configuration:
// no password and a wrong one are refused with 401, the right one gets the
// metrics.
func TestWebConfigBasicAuth(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(cfg, []byte("basic_auth_users:\n  prom: "+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url := serve(t, newTestExporter(t, twoNode), cfg) + "/metrics"
	for _, c := range []struct {
		user, pass string
		want       int
	}{{"", "", 401}, {"prom", "wrong", 401}, {"other", "s3cret", 401}, {"prom", "s3cret", 200}} {
		code, body := status(t, url, c.user, c.pass)
		if code != c.want {
			t.Errorf("user %q password %q: HTTP %d, want %d", c.user, c.pass, code, c.want)
		}
		if has := strings.Contains(body, "numascope_node_numa_hit_total"); has != (c.want == 200) {
			t.Errorf("user %q password %q: metrics in the body: %v", c.user, c.pass, has)
		}
	}
}

// TestPlainServe serves without a web configuration: /metrics and the
// landing page answer, anything else is 404.
func TestPlainServe(t *testing.T) {
	base := serve(t, newTestExporter(t, twoNode), "")
	if code, body := status(t, base+"/metrics", "", ""); code != 200 || !strings.Contains(body, `numascope_numa_distance{from="0",to="1"}`) {
		t.Errorf("/metrics: %d\n%s", code, body)
	}
	if code, body := status(t, base+"/", "", ""); code != 200 || !strings.Contains(body, "/metrics") {
		t.Errorf("/: %d %q", code, body)
	}
	if code, _ := status(t, base+"/nothing", "", ""); code != 404 {
		t.Errorf("/nothing: %d, want 404", code)
	}
}

// TestBadWebConfig: a web configuration that does not parse, or names a
// missing certificate, is an error at start that names the file.
func TestBadWebConfig(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"garbage.yml": "basic_auth_users: [this is not a map\n",
		"nocert.yml":  "tls_server_config:\n  cert_file: " + filepath.Join(dir, "missing.crt") + "\n  key_file: " + filepath.Join(dir, "missing.key") + "\n",
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := newTestExporter(t, twoNode).Listen(ServeConfig{Listen: "127.0.0.1:0", WebConfigFile: path})
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want an error naming the file", name, err)
		}
	}
	_, err := newTestExporter(t, twoNode).Listen(ServeConfig{Listen: "127.0.0.1:0", WebConfigFile: filepath.Join(dir, "absent.yml")})
	if err == nil || !strings.Contains(err.Error(), "absent.yml") {
		t.Errorf("a missing web config file: %v", err)
	}
}

// TestCompression: gzip only with ServeConfig.Compress, when the client
// accepts it.
func TestCompression(t *testing.T) {
	for _, compress := range []bool{false, true} {
		srv, err := newTestExporter(t, twoNode).Listen(ServeConfig{Listen: "127.0.0.1:0", Compress: compress})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ctx) }()
		req, _ := http.NewRequest("GET", "http://"+srv.Addr().String()+"/metrics", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Content-Encoding") == "gzip"; got != compress {
			t.Errorf("Compress %v: Content-Encoding %q", compress, resp.Header.Get("Content-Encoding"))
		}
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestWebConfigTLS serves over TLS with a certificate made for the test: a
// client that trusts it gets the metrics, a plain HTTP request does not.
func TestWebConfigTLS(t *testing.T) {
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "numascope test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	crt, kf := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(crt, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kf, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(cfg, []byte("tls_server_config:\n  cert_file: "+crt+"\n  key_file: "+kf+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := strings.TrimPrefix(serve(t, newTestExporter(t, twoNode), cfg), "http://")
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Get("https://" + base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "numascope_node_numa_hit_total") {
		t.Errorf("over TLS: HTTP %d", resp.StatusCode)
	}
	if code, _ := status(t, "http://"+base+"/metrics", "", ""); code == 200 {
		t.Errorf("plain HTTP to the TLS server got the metrics")
	}
}

// TestStalledClientsDoNotStopScrapes: clients that pipeline scrapes and
// never read the answers (a local user needs no token for /metrics) fill
// their sockets and hold the scrape slots; the write timeout frees them,
// and an honest scrape is answered again within a few seconds, not 503
// for ever.
func TestStalledClientsDoNotStopScrapes(t *testing.T) {
	x := newTestExporter(t, twoNode)
	srv, err := x.Listen(ServeConfig{Listen: "127.0.0.1:0", WriteTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	addr := srv.Addr().String()
	testutil.StallReaders(t, addr, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 2*maxInFlight)
	time.Sleep(300 * time.Millisecond) // the stalled answers fill the slots
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, _ := status(t, "http://"+addr+"/metrics", "", "")
		if code == 200 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics still answers %d 5 s after %d clients stopped reading (write timeout 500 ms)", code, 2*maxInFlight)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
