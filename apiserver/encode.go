package apiserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/berth-dev/berth/api"
)

// streamBufferSize is how much of a list or watch stream is buffered
// before it goes to the connection.
const streamBufferSize = 32 << 10

// writeJSON answers v as JSON with a status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	var buf bytes.Buffer
	err := encodeCompact(&buf, v)
	writeEncoded(w, code, buf.Bytes(), err)
}

// writeStored answers an object as the store holds it (see storedJSON).
func writeStored(w http.ResponseWriter, code int, obj api.Object) {
	data, err := storedJSON(obj)
	writeEncoded(w, code, data, err)
}

// writeEncoded answers data, the JSON of an answer, or the error its
// encoding met. An answer under a byte budget (budgetedWriter) holds its
// length of it while it is written.
func writeEncoded(w http.ResponseWriter, code int, data []byte, err error) {
	if err != nil {
		WriteError(w, err)
		return
	}
	if bw, ok := w.(*budgetedWriter); ok && code < http.StatusBadRequest {
		give, err := bw.take(int64(len(data)))
		if err != nil {
			WriteError(w, err)
			return
		}
		defer give()
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(data)
}

// encoded is the JSON of one object the store holds, encoded once by
// whichever reader asked first while the others wait for it.
type encoded struct {
	obj  api.Object
	once sync.Once
	data []byte
	err  error
}

// recentJSON remembers the JSON of the stored objects encoded last, by
// identity, in a small direct-mapped table. The store's objects never
// change, so one pointer (one resourceVersion) always encodes to the
// same bytes: a write's answer and the watch event that carries the same
// version (an agent's status write and the event of it on the agent's
// own watch) are encoded once rather than twice, and so are the GETs of
// one object by many readers and its events to many watchers at once.
// 200 readers of a 1.3 MB ConfigMap each encoding it themselves held
// gigabytes.
var recentJSON [1024]atomic.Pointer[encoded]

// storedEncodings counts the objects storedJSON has encoded.
var storedEncodings atomic.Int64

// storedJSON is the JSON of obj, an object as the store holds it (never
// to be changed again), from recentJSON when it is there; concurrent
// callers for one object wait for a single encoding. The bytes are
// shared: callers write them and keep no reference.
func storedJSON(obj api.Object) ([]byte, error) {
	p := reflect.ValueOf(obj).Pointer()
	slot := &recentJSON[(p>>6^p>>16)%uintptr(len(recentJSON))]
	e := slot.Load()
	if e == nil || e.obj != obj {
		mine := &encoded{obj: obj}
		if slot.CompareAndSwap(e, mine) {
			e = mine
		} else if e = slot.Load(); e == nil || e.obj != obj {
			// Another object took the slot meanwhile: encode alone.
			e = mine
		}
	}
	e.once.Do(func() {
		storedEncodings.Add(1)
		var buf bytes.Buffer
		if e.err = encodeCompact(&buf, obj); e.err == nil {
			e.data = buf.Bytes()
		}
	})
	return e.data, e.err
}

// encodeCompact appends v's JSON to buf without the newline
// json.Encoder ends with, and without escaping HTML (API objects are not
// HTML). The encoder reuses its internal state, sparing an allocation per
// object over json.Marshal.
func encodeCompact(buf *bytes.Buffer, v any) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	buf.Truncate(buf.Len() - 1)
	return nil
}

// listWriter streams a list: the envelope, then each item as it is read
// from the snapshot, so that a list of 100,000 pods never sits whole in
// memory. Once the first byte is out, an error can only cut the stream
// short (the client sees truncated JSON and retries).
type listWriter struct {
	w     *bufio.Writer
	buf   bytes.Buffer
	n     int
	err   error
	table *tabler
	// serve gives an object in the version the request named, if set.
	serve func(api.Object) api.Object
}

// listMeta is a list's metadata: the revision it was read at and, for a
// page that more follow, the token of the next and how many are left.
type listMeta struct {
	rev       uint64
	cont      string
	remaining *int64
}

// json is the metadata object.
func (m listMeta) json() string {
	out := `{"resourceVersion":"` + strconv.FormatUint(m.rev, 10) + `"`
	if m.cont != "" {
		// A token is base64url: nothing in it needs escaping.
		out += `,"continue":"` + m.cont + `"`
	}
	if m.remaining != nil {
		out += `,"remainingItemCount":` + strconv.FormatInt(*m.remaining, 10)
	}
	return out + "}"
}

// newListWriter writes the envelope of a list of kind k with metadata m,
// or of a Table when t is set.
func newListWriter(w http.ResponseWriter, k *api.Kind, m listMeta, t *tabler) *listWriter {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	lw := &listWriter{w: bufio.NewWriterSize(w, streamBufferSize), table: t}
	if t != nil {
		lw.w.WriteString(`{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":` + m.json() + `,"columnDefinitions":`)
		lw.buf.Reset()
		lw.err = encodeCompact(&lw.buf, t.columnDefinitions())
		lw.w.Write(lw.buf.Bytes())
		lw.w.WriteString(`,"rows":[`)
		return lw
	}
	lw.w.WriteString(`{"kind":"` + k.GVK.Kind + `List","apiVersion":"` + k.APIVersion() + `","metadata":` + m.json() + `,"items":[`)
	return lw
}

// add writes one item; it reports false once writing has failed.
func (lw *listWriter) add(obj api.Object) bool {
	if lw.err != nil {
		return false
	}
	if lw.n > 0 {
		lw.w.WriteByte(',')
	}
	lw.n++
	lw.buf.Reset()
	if lw.serve != nil {
		obj = lw.serve(obj)
	}
	if lw.table != nil {
		lw.err = encodeCompact(&lw.buf, lw.table.row(obj))
	} else {
		lw.err = encodeCompact(&lw.buf, obj)
	}
	if lw.err == nil {
		_, lw.err = lw.w.Write(lw.buf.Bytes())
	}
	return lw.err == nil
}

// close ends the list and flushes it.
func (lw *listWriter) close() error {
	if lw.err != nil {
		return lw.err
	}
	lw.w.WriteString("]}")
	return lw.w.Flush()
}

// eventWriter writes watch events, one JSON object per line:
// {"type":"ADDED","object":{…}}.
type eventWriter struct {
	// w buffers what is written between flushes; it comes from
	// eventBuffers and goes back at each flush, so that the thousands of
	// mostly idle watches of a large cluster (one per node) hold no buffer.
	w     *bufio.Writer
	rw    http.ResponseWriter
	rc    *http.ResponseController
	buf   bytes.Buffer
	table *tabler
	// headers: a Table stream sends its column definitions with the first
	// event only, as Kubernetes does.
	headersSent bool
	// serve gives an object in the version the request named, if set.
	serve func(api.Object) api.Object
}

func newEventWriter(w http.ResponseWriter, t *tabler) *eventWriter {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, private")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	ew := &eventWriter{rw: w, rc: http.NewResponseController(w), table: t}
	return ew
}

// eventBuffers are the buffers of the watch streams that are writing.
var eventBuffers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, eventBufferSize) }}

// eventBufferSize is a watch stream's buffer: a few events, which is what
// a stream writes between flushes but for its initial burst. A burst of
// changes wakes thousands of streams at once (one per node), and each
// holds a buffer from the pool until its flush.
const eventBufferSize = 8 << 10

// out is the stream's buffer, taken from eventBuffers if it has none.
func (ew *eventWriter) out() *bufio.Writer {
	if ew.w == nil {
		ew.w = eventBuffers.Get().(*bufio.Writer)
		ew.w.Reset(ew.rw)
	}
	return ew.w
}

// write encodes one event; objects of the watched kind become a one-row
// Table when the client asked for tables.
func (ew *eventWriter) write(typ string, obj any) error {
	ew.buf.Reset()
	if o, ok := obj.(api.Object); ok && ew.table != nil {
		obj = ew.table.single(o, !ew.headersSent)
		ew.headersSent = true
	}
	if err := encodeCompact(&ew.buf, obj); err != nil {
		return err
	}
	return ew.writeRaw(typ, ew.buf.Bytes())
}

// writeStored encodes one event of an object as the store holds it,
// through storedJSON unless the client asked for tables.
func (ew *eventWriter) writeStored(typ string, obj api.Object) error {
	if ew.serve != nil {
		obj = ew.serve(obj)
	}
	if ew.table != nil {
		return ew.write(typ, obj)
	}
	data, err := storedJSON(obj)
	if err != nil {
		return err
	}
	return ew.writeRaw(typ, data)
}

// writeRaw writes an event whose object is already JSON.
func (ew *eventWriter) writeRaw(typ string, object []byte) error {
	w := ew.out()
	w.WriteString(`{"type":"`)
	w.WriteString(typ)
	w.WriteString(`","object":`)
	w.Write(object)
	_, err := w.WriteString("}\n")
	return err
}

// flush sends what is buffered to the client and gives the buffer back.
func (ew *eventWriter) flush() error {
	if w := ew.w; w != nil {
		err := w.Flush()
		w.Reset(nil)
		eventBuffers.Put(w)
		ew.w = nil
		if err != nil {
			return err
		}
	}
	if err := ew.rc.Flush(); err != nil && err != http.ErrNotSupported {
		return err
	}
	return nil
}

// bookmarkObject is the object of a BOOKMARK event: only the kind and the
// resourceVersion, plus the annotation that ends the initial events of a
// sendInitialEvents watch.
func bookmarkObject(k *api.Kind, rev uint64, initialEnd bool) []byte {
	var b bytes.Buffer
	b.WriteString(`{"kind":"` + k.GVK.Kind + `","apiVersion":"` + k.APIVersion() + `","metadata":{"resourceVersion":"` + strconv.FormatUint(rev, 10) + `"`)
	if initialEnd {
		b.WriteString(`,"annotations":{"k8s.io/initial-events-end":"true"}`)
	}
	b.WriteString(`}}`)
	return b.Bytes()
}
