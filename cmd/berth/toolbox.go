package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"
)

// newToolboxCommand holds the small programs berth carries so that its
// examples run on a machine that has nothing but berth and /bin/sh. It is
// hidden: the commands are for pods, not for people.
func newToolboxCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:    "toolbox",
		Short:  "Small programs for pods (examples, tests)",
		Hidden: true,
		Args:   cobra.NoArgs,
	}
	cmd.AddCommand(newHTTPEchoCommand(g), newWebhookCommand(g))
	return cmd
}

// echoShutdownTimeout bounds how long in-flight requests may finish after
// SIGTERM; it stays well under a pod's default grace period of 30s.
const echoShutdownTimeout = 5 * time.Second

func newHTTPEchoCommand(g *globalOptions) *cobra.Command {
	var listen, text, upstream, dnsServer string
	cmd := &cobra.Command{
		Use:   "http-echo --listen ADDR --text TEXT",
		Short: "Serve a fixed text over HTTP, with a /healthz",
		Long: `http-echo answers every path with TEXT and a newline, except /healthz,
which answers 200 "ok" for probes. It stops gracefully on SIGTERM.

With --upstream URL it is a front tier: / answers TEXT, then what a GET of
URL answered (or why it could not), so one pod can show that it finds
another by its service name. --dns ADDR resolves the upstream's host name
with that DNS server (berth's cluster DNS, host:port) instead of the
system's resolver.`,
		Example: `  berth toolbox http-echo --listen 127.0.0.1:8080 --text hello
  berth toolbox http-echo --listen 127.0.0.1:8081 --text front \
      --upstream http://back.default.svc.cluster.local:8082/ --dns 127.0.0.1:10053`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return failed(fmt.Errorf("http-echo: %w", err))
			}
			h := echoHandler(g.logger, text, nil)
			if upstream != "" {
				h = echoHandler(g.logger, text, upstreamClient(upstream, dnsServer))
			}
			if err := serveEcho(cmd.Context(), g.logger, "http-echo", ln, h); err != nil {
				return failed(fmt.Errorf("http-echo: %w", err))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", ":8080", "address to listen on, host:port")
	cmd.Flags().StringVar(&text, "text", "hello from berth", "text to answer with")
	cmd.Flags().StringVar(&upstream, "upstream", "", "URL whose answer / adds to the text (a front tier)")
	cmd.Flags().StringVar(&dnsServer, "dns", "", "DNS server (host:port) for the upstream's host name; default the system's")
	return cmd
}

// fetchFunc gets what an upstream answers, for a front tier.
type fetchFunc func(ctx context.Context) (string, error)

// upstreamClient fetches url, resolving its host with dnsServer when one
// is given: a pod under the exec runtime shares the host's resolver, which
// does not know the cluster's names.
func upstreamClient(url, dnsServer string) fetchFunc {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	if dnsServer != "" {
		dialer.Resolver = &net.Resolver{
			PreferGo: true,
			Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, network, dnsServer)
			},
		}
	}
	client := &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{DialContext: dialer.DialContext, DisableKeepAlives: true},
	}
	return func(ctx context.Context) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return "", err
		}
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return "", err
		}
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return string(body), nil
	}
}

// echoHandler answers text on every path and "ok" on /healthz, and logs
// each request at debug level. With an upstream, / also carries what the
// upstream answered, or the error.
func echoHandler(log *slog.Logger, text string, upstream fetchFunc) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if upstream == nil {
			fmt.Fprintln(w, text)
			return
		}
		body, err := upstream(r.Context())
		if err != nil {
			log.Debug("upstream", "err", err)
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprintf(w, "%s\nupstream: %v\n", text, err)
			return
		}
		fmt.Fprintf(w, "%s\n%s", text, body)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.Debug("request", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
		mux.ServeHTTP(w, r)
	})
}

// serveEcho serves on ln until ctx ends, then lets in-flight requests
// finish; name is the program's, for its log.
func serveEcho(ctx context.Context, log *slog.Logger, name string, ln net.Listener, h http.Handler) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info(name+" serving", "addr", ln.Addr().String())

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info(name+" shutting down", "addr", ln.Addr().String())
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), echoShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
