package agent

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

var credEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func testCredential(t *testing.T, from, to time.Time) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{
		IssuedAt: jwt.NewNumericDate(from), ExpiresAt: jwt.NewNumericDate(to),
	}).SignedString([]byte("test"))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func testServingCert(t *testing.T, from, to time.Time) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "n1"}, NotBefore: from, NotAfter: to}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func TestRenewalTime(t *testing.T) {
	year := credEpoch.Add(365 * 24 * time.Hour)
	month := credEpoch.Add(30 * 24 * time.Hour)
	at := func(d time.Time, f float64) time.Time {
		return credEpoch.Add(time.Duration(float64(d.Sub(credEpoch)) * f))
	}
	for _, tt := range []struct {
		name   string
		joined api.JoinResponse
		r      float64
		want   time.Time
		ok     bool
	}{
		{"nothing says when it expires", api.JoinResponse{Token: "not a token", ServingCertificate: "not a certificate"}, 0, time.Time{}, false},
		{"the credential alone, at 80%", api.JoinResponse{Token: testCredential(t, credEpoch, year)}, 0, at(year, 0.8), true},
		{"the certificate alone, jittered late", api.JoinResponse{ServingCertificate: testServingCert(t, credEpoch, year)}, 1, at(year, 0.85), true},
		{"the certificate alone, jittered early", api.JoinResponse{ServingCertificate: testServingCert(t, credEpoch, year)}, -1, at(year, 0.75), true},
		{"the earlier of the two", api.JoinResponse{Token: testCredential(t, credEpoch, year), ServingCertificate: testServingCert(t, credEpoch, month)}, 0, at(month, 0.8), true},
	} {
		got, ok := renewalTime(tt.joined, tt.r)
		if ok != tt.ok || got.Sub(tt.want).Abs() > time.Second {
			t.Errorf("%s: %v %v, want %v %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func TestServingCertSwaps(t *testing.T) {
	var s servingCert
	if _, err := s.get(nil); err == nil {
		t.Error("no certificate yet: no error")
	}
	for _, cn := range []string{"first", "second"} {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, NotBefore: credEpoch, NotAfter: credEpoch.Add(time.Hour)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.set(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
			string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))); err != nil {
			t.Fatal(err)
		}
		c, err := s.get(nil)
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil || leaf.Subject.CommonName != cn {
			t.Errorf("after setting %s: %v %v", cn, leaf.Subject.CommonName, err)
		}
	}
	if err := s.set("garbage", "garbage"); err == nil {
		t.Error("a garbage certificate: no error")
	}
}

// TestRenewalSurvivesARefusedJoin: a renewal join the server refuses (the
// join token changed) leaves the connected run alone and is tried again
// after renewRetry; one that succeeds hands its credentials to the next
// run.
func TestRenewalSurvivesARefusedJoin(t *testing.T) {
	var refuse atomic.Bool
	refuse.Store(true)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != api.JoinPath {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if refuse.Load() {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":401,"reason":"Unauthorized","message":"join: invalid or missing node join token"}`)
			return
		}
		_, _ = io.WriteString(w, `{"token":"renewed"}`)
	}))
	defer srv.Close()
	clk := clocktesting.NewFakeClock(credEpoch)
	a, err := New(Config{Server: srv.URL, JoinToken: "old", InsecureSkipTLSVerify: true, NodeName: "n1", NodeIP: "127.0.0.1",
		Listen: "127.0.0.1:0", DataDir: t.TempDir(), Clock: clk, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.listener.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.renewAt(ctx, credEpoch) }()

	testtool.WaitFor(t, 10*time.Second, "the renewal timer", func() error {
		if !clk.HasWaiters() {
			return errors.New("no timer yet")
		}
		return nil
	})
	clk.Step(minRenewWait) // the first attempt: refused
	testtool.WaitFor(t, 10*time.Second, "the retry timer after the refusal", func() error {
		if !clk.HasWaiters() {
			return errors.New("no timer yet")
		}
		return nil
	})
	select {
	case err := <-done:
		t.Fatalf("a refused renewal ended the run: %v", err)
	default:
	}
	refuse.Store(false)
	clk.Step(renewRetry)
	select {
	case err := <-done:
		if !errors.Is(err, errRenew) {
			t.Fatalf("renewAt: %v, want errRenew", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second attempt did not end the run")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.renewed == nil || a.renewed.Token != "renewed" {
		t.Errorf("renewed credentials %+v, want the second join's", a.renewed)
	}
}
