package e2e

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/anishathalye/porcupine"
)

// The sequential specification the linearizability check holds berth's
// API to, one object name at a time: create, update at a
// resourceVersion, delete and get of a ConfigMap whose data is one value
// (each write's value is unique, so a read says which write it sees).

// kvOp is what an operation asks.
type kvOp string

const (
	opCreate kvOp = "create"
	opUpdate kvOp = "update"
	opDelete kvOp = "delete"
	opGet    kvOp = "get"
)

// kvResult is how the API answered.
type kvResult string

const (
	resOK       kvResult = "ok"
	resExists   kvResult = "exists"   // 409 AlreadyExists
	resConflict kvResult = "conflict" // 409 Conflict on resourceVersion
	resNotFound kvResult = "notfound" // 404
	// resUnknown: no answer, or one that does not say whether the write
	// was made (a timeout, a 504, a connection lost). It returns at the
	// end of the history: made at any time after its call, or never.
	resUnknown kvResult = "unknown"
)

// kvInput is an operation on one object name; rv is an update's
// precondition and value a write's data.
type kvInput struct {
	op        kvOp
	key       string
	value, rv string
}

// kvOutput is the answer: the object's value and resourceVersion when
// it carries one.
type kvOutput struct {
	result    kvResult
	value, rv string
}

// kvState is one object as the API should hold it; rv is "" when a
// write of unknown outcome may have made it, whose resourceVersion no
// answer told.
type kvState struct {
	exists    bool
	value, rv string
}

// kvModel is the specification, partitioned by object name.
var kvModel = porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(kvInput).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() []any { return []any{kvState{}} },
	Step: func(s, in, out any) []any {
		return kvStep(s.(kvState), in.(kvInput), out.(kvOutput))
	},
	DescribeOperation: func(in, out any) string {
		i, o := in.(kvInput), out.(kvOutput)
		return fmt.Sprintf("%s(%s %s rv=%s) → %s %s rv=%s", i.op, i.key, i.value, i.rv, o.result, o.value, o.rv)
	},
	DescribeState: func(s any) string {
		st := s.(kvState)
		if !st.exists {
			return "absent"
		}
		return fmt.Sprintf("%s rv=%s", st.value, st.rv)
	},
}

// kvStep is the states s may move to when in is answered out; none when
// that answer is impossible from s.
func kvStep(s kvState, in kvInput, out kvOutput) []any {
	rvMatches := func(rv string) bool { return s.rv == "" || s.rv == rv }
	switch out.result {
	case resUnknown:
		// Made or not: both states are possible from here.
		made := s
		switch in.op {
		case opCreate:
			if !s.exists {
				made = kvState{exists: true, value: in.value}
			}
		case opUpdate:
			if s.exists && rvMatches(in.rv) {
				made = kvState{exists: true, value: in.value}
			}
		case opDelete:
			made = kvState{}
		}
		return []any{s, made}
	case resNotFound:
		if !s.exists {
			return []any{s}
		}
	case resExists:
		if in.op == opCreate && s.exists {
			return []any{s}
		}
	case resConflict:
		// An unknown resourceVersion may be another than the one asked.
		if in.op == opUpdate && s.exists && (s.rv == "" || s.rv != in.rv) {
			return []any{s}
		}
	case resOK:
		switch in.op {
		case opCreate:
			if !s.exists && out.value == in.value {
				return []any{kvState{exists: true, value: in.value, rv: out.rv}}
			}
		case opUpdate:
			if s.exists && rvMatches(in.rv) && out.value == in.value {
				return []any{kvState{exists: true, value: in.value, rv: out.rv}}
			}
		case opDelete:
			if s.exists && out.value == s.value {
				return []any{kvState{}}
			}
		case opGet:
			if s.exists && out.value == s.value && rvMatches(out.rv) {
				return []any{kvState{exists: true, value: s.value, rv: out.rv}}
			}
		}
	}
	return nil
}

// unknownReturn is the return time of an operation of unknown outcome:
// after everything else in the history.
const unknownReturn = math.MaxInt64

// TestKVModel holds the specification to the histories it must accept
// and refuse: a checker that passes everything finds nothing.
func TestKVModel(t *testing.T) {
	t.Parallel()
	op := func(client int, call, ret int64, in kvInput, out kvOutput) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
	}
	create := func(v string) kvInput { return kvInput{op: opCreate, key: "k", value: v} }
	update := func(v, rv string) kvInput { return kvInput{op: opUpdate, key: "k", value: v, rv: rv} }
	get := kvInput{op: opGet, key: "k"}
	del := kvInput{op: opDelete, key: "k"}
	ok := func(v, rv string) kvOutput { return kvOutput{result: resOK, value: v, rv: rv} }
	unknown := kvOutput{result: resUnknown}
	for _, tc := range []struct {
		name    string
		history []porcupine.Operation
		want    bool
	}{
		{"create then read", []porcupine.Operation{
			op(0, 0, 10, create("a"), ok("a", "5")),
			op(1, 20, 30, get, ok("a", "5")),
		}, true},
		{"a read after an acknowledged create misses it (stale read)", []porcupine.Operation{
			op(0, 0, 10, create("a"), ok("a", "5")),
			op(1, 20, 30, get, kvOutput{result: resNotFound}),
		}, false},
		{"a read concurrent with the create may miss it", []porcupine.Operation{
			op(0, 0, 10, create("a"), ok("a", "5")),
			op(1, 5, 30, get, kvOutput{result: resNotFound}),
		}, true},
		{"409 AlreadyExists for a create nobody made (the deposed leader's race)", []porcupine.Operation{
			op(0, 0, 10, create("a"), kvOutput{result: resExists}),
			op(1, 20, 30, get, kvOutput{result: resNotFound}),
		}, false},
		{"a create of unknown outcome that was made", []porcupine.Operation{
			op(0, 0, unknownReturn, create("a"), unknown),
			op(1, 20, 30, get, ok("a", "7")),
			op(1, 40, 50, update("b", "7"), ok("b", "8")),
		}, true},
		{"a create of unknown outcome that was not", []porcupine.Operation{
			op(0, 0, unknownReturn, create("a"), unknown),
			op(1, 20, 30, get, kvOutput{result: resNotFound}),
		}, true},
		{"an update at a stale resourceVersion that succeeds", []porcupine.Operation{
			op(0, 0, 10, create("a"), ok("a", "5")),
			op(0, 20, 30, update("b", "5"), ok("b", "6")),
			op(1, 40, 50, update("c", "5"), ok("c", "7")),
		}, false},
		{"a conflict at the current resourceVersion", []porcupine.Operation{
			op(0, 0, 10, create("a"), ok("a", "5")),
			op(1, 40, 50, update("c", "5"), kvOutput{result: resConflict}),
		}, false},
		{"a delete of what is there, then NotFound", []porcupine.Operation{
			op(0, 0, 10, create("a"), ok("a", "5")),
			op(0, 20, 30, del, ok("a", "5")),
			op(1, 40, 50, get, kvOutput{result: resNotFound}),
			op(1, 60, 70, del, kvOutput{result: resNotFound}),
		}, true},
		{"a read of a value never written", []porcupine.Operation{
			op(0, 0, 10, create("a"), ok("a", "5")),
			op(1, 20, 30, get, ok("z", "5")),
		}, false},
		{"a lost acknowledged update", []porcupine.Operation{
			op(0, 0, 10, create("a"), ok("a", "5")),
			op(0, 20, 30, update("b", "5"), ok("b", "6")),
			op(1, 40, 50, get, ok("a", "5")),
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := porcupine.CheckOperations(kvModel.ToModel(), slices.Clone(tc.history))
			if got != tc.want {
				t.Errorf("linearizable = %v, want %v", got, tc.want)
			}
		})
	}
}
