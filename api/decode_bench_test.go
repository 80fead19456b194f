package api

import (
	"fmt"
	"runtime"
	"testing"
)

// benchManifests is a realistic set of one-object files: a Deployment (with
// resources, probes, env and a volume) and a Service per application.
func benchManifests(n int) [][]byte {
	files := make([][]byte, 0, 2*n)
	for i := range n {
		name := fmt.Sprintf("app-%05d", i)
		files = append(files, fmt.Appendf(nil, `# Deployment of %[1]s
apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  namespace: shop
  labels:
    app.kubernetes.io/name: %[1]s
    app.kubernetes.io/part-of: shop
  annotations:
    team: payments
spec:
  replicas: 3
  selector:
    matchLabels:
      app.kubernetes.io/name: %[1]s
  template:
    metadata:
      labels:
        app.kubernetes.io/name: %[1]s
    spec:
      containers:
      - name: web
        image: registry.example.com/shop/%[1]s:1.4.2
        args: ["--port=8080", "--log-level=info"]
        ports:
        - name: http
          containerPort: 8080
        env:
        - name: MODE
          value: production
        - name: POD_NAME
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        resources:
          requests:
            cpu: 100m
            memory: 128Mi
          limits:
            memory: 256Mi
        readinessProbe:
          httpGet:
            path: /healthz
            port: http
          periodSeconds: 5
        volumeMounts:
        - name: config
          mountPath: /etc/app
      volumes:
      - name: config
        configMap:
          name: %[1]s
`, name), fmt.Appendf(nil, `apiVersion: v1
kind: Service
metadata:
  name: %[1]s
  namespace: shop
spec:
  selector:
    app.kubernetes.io/name: %[1]s
  ports:
  - name: http
    port: 80
    targetPort: http
`, name))
	}
	return files
}

// BenchmarkDecodeStream decodes Deployment and Service manifests, one per
// file; it reports CPU per manifest and the heap each Decoded keeps alive.
func BenchmarkDecodeStream(b *testing.B) {
	files := benchManifests(500)
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for b.Loop() {
		for i, f := range files {
			objs, errs := DecodeStream(fmt.Sprintf("f%d.yaml", i), f, DecodeOptions{DropStatus: true})
			if len(errs) > 0 || len(objs) != 1 {
				b.Fatal(errs)
			}
			n++
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n)/1000, "µs/manifest")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkDecodedRetained measures the heap that decoded objects keep
// alive (the objects themselves and whatever Decoded holds for LineOf).
func BenchmarkDecodedRetained(b *testing.B) {
	files := benchManifests(2500)
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		kept := make([]*Decoded, 0, len(files))
		for i, f := range files {
			objs, errs := DecodeStream(fmt.Sprintf("f%d.yaml", i), f, DecodeOptions{DropStatus: true})
			if len(errs) > 0 {
				b.Fatal(errs)
			}
			kept = append(kept, objs...)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(len(kept)), "B/Decoded")
		if kept[len(kept)-1].LineOf("spec") == 0 {
			b.Fatal("no line")
		}
		runtime.KeepAlive(kept)
		runtime.KeepAlive(files)
	}
}
