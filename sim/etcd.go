package sim

import (
	"context"
	"log/slog"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/berth-dev/berth/controlplane"
)

// dropEtcdPrefix deletes what a run kept in etcd: every key under its
// prefix. A run's cluster is its own; left there, its objects would be
// nobody's.
func dropEtcdPrefix(storeValue, prefix string, log *slog.Logger) {
	hosts, err := controlplane.EtcdEndpoints(storeValue)
	if err != nil {
		return
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: hosts, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		log.Warn("sim: delete the run's keys from etcd", "prefix", prefix, "err", err)
		return
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cli.Delete(ctx, prefix+"/", clientv3.WithPrefix()); err != nil {
		log.Warn("sim: delete the run's keys from etcd", "prefix", prefix, "err", err)
	}
}
