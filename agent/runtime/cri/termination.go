package cri

import (
	"bytes"
	"context"
	"io"
	"os"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	crilogs "k8s.io/cri-client/pkg/logs"
)

// The kubelet's bounds on a termination message: what is read of the
// container's file, and of its log's tail when that stands in.
const (
	maxTerminationMessage    = 4096
	maxTerminationLogMessage = 2048
	terminationLogTailLines  = 80
)

// terminationMessage is what an exited container left as its termination
// message, as the kubelet reads it: the file mounted at its
// terminationMessagePath, or, with FallbackToLogsOnError, the tail of its
// log when that file is empty and the container failed.
func terminationMessage(s *runtimeapi.ContainerStatus) string {
	path := s.Annotations[annotationTerminationMessagePath]
	if path == "" {
		return ""
	}
	for _, m := range s.Mounts {
		if m.ContainerPath != path {
			continue
		}
		if b, err := readAtMost(m.HostPath, maxTerminationMessage); err == nil && len(b) > 0 {
			return string(b)
		}
		break
	}
	if s.Annotations[annotationTerminationMessagePolicy] != policyFallbackToLogsOnError || s.ExitCode == 0 || s.LogPath == "" {
		return ""
	}
	return logTail(s.LogPath)
}

func readAtMost(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}

// logTail is the last lines of a CRI log file, as the process wrote them,
// at most maxTerminationLogMessage bytes.
func logTail(path string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n := int64(terminationLogTailLines)
	var buf bytes.Buffer
	if err := crilogs.ReadLogs(ctx, path, "", &crilogs.LogOptions{TailLines: &n}, nil, &buf, &buf); err != nil {
		return ""
	}
	b := buf.Bytes()
	if len(b) > maxTerminationLogMessage {
		b = b[len(b)-maxTerminationLogMessage:]
	}
	return string(b)
}
