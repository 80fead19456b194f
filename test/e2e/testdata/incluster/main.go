// Command incluster is a client of the API run inside a pod: stock
// client-go's in-cluster configuration (KUBERNETES_SERVICE_HOST and
// _PORT, the service account's token and ca.crt), then the names of the
// pods of its namespace, one a line.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"

	"k8s.io/client-go/rest"
)

func main() {
	if err := list(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func list() error {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return err
	}
	ns, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return err
	}
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	resp, err := c.Get(cfg.Host + "/api/v1/namespaces/" + string(ns) + "/pods")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("list pods: %s: %s", resp.Status, b)
	}
	var pods struct {
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal(b, &pods); err != nil {
		return err
	}
	fmt.Printf("in-cluster config of %s\n", cfg.Host)
	for _, p := range pods.Items {
		fmt.Println("pod/" + p.Metadata.Name)
	}
	return nil
}
