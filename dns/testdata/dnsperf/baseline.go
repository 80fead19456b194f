package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"

	mdns "github.com/miekg/dns"
)

// serveBaseline answers the same questions the way the reference
// does: a bare miekg/dns server (one UDP socket, its own read loop) that
// looks each question up in a map of prepared records and packs the
// answer. It measures how close berth's server comes to the limit of a Go
// server on the machine.
func serveBaseline(listen string, services, endpoints, namespaces int, queries string, run bool, p perf) error {
	if err := writeQueries(queries, services, namespaces); err != nil {
		return err
	}
	type rrs struct{ answer, extra []mdns.RR }
	records := map[string]rrs{}
	soa, _ := mdns.NewRR("cluster.local. 5 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 1 7200 1800 86400 5")
	for i := range services {
		name := fmt.Sprintf("svc-%d.ns-%d.svc.cluster.local.", i, i%namespaces)
		srvName := "_http._tcp." + name
		var a, srv, extra []mdns.RR
		for j := range endpoints {
			n := i*endpoints + j + 1
			ip := net.IPv4(10, byte(n>>16), byte(n>>8), byte(n)).To4()
			host := fmt.Sprintf("svc-%d-%05d.%s", i, j, name)
			a = append(a, &mdns.A{Hdr: mdns.RR_Header{Name: name, Rrtype: mdns.TypeA, Class: mdns.ClassINET, Ttl: 5}, A: ip})
			srv = append(srv, &mdns.SRV{Hdr: mdns.RR_Header{Name: srvName, Rrtype: mdns.TypeSRV, Class: mdns.ClassINET, Ttl: 5}, Weight: 10, Port: 8080, Target: host})
			extra = append(extra, &mdns.A{Hdr: mdns.RR_Header{Name: host, Rrtype: mdns.TypeA, Class: mdns.ClassINET, Ttl: 5}, A: ip})
		}
		records[name+"/A"] = rrs{answer: a}
		records[srvName+"/SRV"] = rrs{answer: srv, extra: extra}
	}
	handler := mdns.HandlerFunc(func(w mdns.ResponseWriter, r *mdns.Msg) {
		m := new(mdns.Msg)
		m.SetReply(r)
		m.Authoritative = true
		q := r.Question[0]
		if rr, ok := records[strings.ToLower(q.Name)+"/"+mdns.TypeToString[q.Qtype]]; ok {
			m.Answer = rr.answer
			m.Extra = append([]mdns.RR(nil), rr.extra...)
		} else {
			m.Rcode = mdns.RcodeNameError
			m.Ns = []mdns.RR{soa}
		}
		if o := r.IsEdns0(); o != nil {
			m.SetEdns0(o.UDPSize(), o.Do())
		}
		_ = w.WriteMsg(m)
	})
	pc, err := net.ListenPacket("udp", listen)
	if err != nil {
		return err
	}
	started := make(chan struct{})
	srv := &mdns.Server{PacketConn: pc, Handler: handler, NotifyStartedFunc: func() { close(started) }}
	done := make(chan error, 1)
	go func() { done <- srv.ActivateAndServe() }()
	<-started
	fmt.Printf("baseline server on %s\n", pc.LocalAddr())
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	err = dnsperf(ctx, pc.LocalAddr().String(), queries, run, p)
	_ = srv.Shutdown()
	<-done
	return err
}
