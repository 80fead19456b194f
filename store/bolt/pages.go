package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// bbolt follows the page references of a file as they are: a corrupt
// file whose pages refer back to a page above them makes it descend
// forever (its cursor's stack grows until memory runs out), which no
// recover catches. checkPages walks the page tree of a file first, by the
// file format bbolt documents (page, branch and leaf headers, buckets
// inline or on pages of their own), and refuses a reference out of the
// file or to a page already seen, so that what bbolt reads after it is a
// tree within the file. It checks the freelist page too, which bbolt
// reads as it finds it when it opens a file for writing.

const (
	pageHeaderSize  = 16
	elementSize     = 16
	metaMagic       = 0xED0CDAED
	metaVersion     = 2
	branchPageFlag  = 0x01
	leafPageFlag    = 0x02
	bucketLeafFlag  = 0x01
	bucketValueSize = 16
	maxPageDepth    = 64
)

const (
	freelistPageFlag = 0x10
	// noFreelist is the freelist page of a file whose freelist is not
	// written (bbolt's NoFreelistSync, as the server writes it).
	noFreelist = ^uint64(0)
	// freelistCountOverflow in a freelist page's count says that the
	// count is the page's first id instead, as it does not fit.
	freelistCountOverflow = 0xFFFF
	pgidSize              = 8
)

type pageWalker struct {
	f        *os.File
	pageSize uint64
	hwm      uint64
	seen     map[uint64]bool
}

// checkPages checks the page tree of the bolt file f, of size bytes.
func checkPages(f *os.File, size int64) error {
	hdr := make([]byte, 4096)
	if _, err := f.ReadAt(hdr, 0); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	// The page size is in the first meta page; the second lies one page
	// on.
	ps := uint64(binary.LittleEndian.Uint32(hdr[pageHeaderSize+8:]))
	if ps < 512 || ps > 1<<20 || uint64(size) < 2*ps {
		return fmt.Errorf("invalid page size %d", ps)
	}
	metas, err := readMetas(f, ps)
	if err != nil {
		return err
	}
	var best []byte
	var bestTx uint64
	for _, m := range metas {
		if m.valid && (best == nil || m.txid > bestTx) {
			best, bestTx = m.raw, m.txid
		}
	}
	if best == nil {
		return errors.New("invalid: no valid meta page")
	}
	w := &pageWalker{f: f, pageSize: ps, hwm: binary.LittleEndian.Uint64(best[40:]), seen: map[uint64]bool{}}
	if w.hwm > uint64(size)/ps {
		return fmt.Errorf("truncated: %d bytes, its header says %d pages of %d", size, w.hwm, ps)
	}
	if _, err := w.walk(binary.LittleEndian.Uint64(best[16:]), 0, nil, nil); err != nil {
		return err
	}
	return w.checkFreelist(binary.LittleEndian.Uint64(best[32:]))
}

// read reads the page id, with the pages it overflows into, after
// checking that they lie in the file and were not read before.
func (w *pageWalker) read(id uint64) ([]byte, error) {
	if w.seen[id] {
		return nil, fmt.Errorf("corrupt: page %d referenced twice", id)
	}
	// One read for the page, which its header says whether it overflows
	// into the next; a second only for those.
	p := make([]byte, w.pageSize)
	if _, err := w.f.ReadAt(p, int64(id*w.pageSize)); err != nil {
		return nil, err
	}
	overflow := uint64(binary.LittleEndian.Uint32(p[12:]))
	if overflow >= w.hwm-id {
		return nil, fmt.Errorf("corrupt: page %d overflows the file", id)
	}
	for i := range overflow + 1 {
		if w.seen[id+i] {
			return nil, fmt.Errorf("corrupt: page %d referenced twice", id+i)
		}
		w.seen[id+i] = true
	}
	if overflow > 0 {
		p = append(p, make([]byte, overflow*w.pageSize)...)
		if _, err := w.f.ReadAt(p[w.pageSize:], int64((id+1)*w.pageSize)); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// checkFreelist checks the freelist page id (after the tree's walk): a
// page of the file marked as a freelist, whose ids fit in it and name
// pages of the file that the tree does not use, each once.
func (w *pageWalker) checkFreelist(id uint64) error {
	if id == noFreelist {
		return nil
	}
	if id < 2 || id >= w.hwm {
		return fmt.Errorf("corrupt: freelist page %d out of the file's %d pages", id, w.hwm)
	}
	if w.seen[id] {
		return fmt.Errorf("corrupt: freelist page %d is a page of the tree too", id)
	}
	p, err := w.read(id)
	if err != nil {
		return err
	}
	if flags := binary.LittleEndian.Uint16(p[8:]); flags != freelistPageFlag {
		return fmt.Errorf("corrupt: freelist page %d: not a freelist page (flags %#x)", id, flags)
	}
	ids := p[pageHeaderSize:]
	count := uint64(binary.LittleEndian.Uint16(p[10:]))
	if count == freelistCountOverflow {
		count = binary.LittleEndian.Uint64(ids)
		ids = ids[pgidSize:]
	}
	if count > uint64(len(ids))/pgidSize {
		return fmt.Errorf("corrupt: freelist page %d: %d ids do not fit", id, count)
	}
	free := make(map[uint64]bool, count)
	for i := range count {
		fid := binary.LittleEndian.Uint64(ids[i*pgidSize:])
		switch {
		case fid < 2 || fid >= w.hwm:
			return fmt.Errorf("corrupt: freelist page %d: free page %d out of the file's %d pages", id, fid, w.hwm)
		case w.seen[fid]:
			return fmt.Errorf("corrupt: freelist page %d: page %d is free and in use", id, fid)
		case free[fid]:
			return fmt.Errorf("corrupt: freelist page %d: page %d is free twice", id, fid)
		}
		free[fid] = true
	}
	return nil
}

// walk checks the page id and the pages below it, whose keys must lie in
// [lo, hi) (nil: unbounded); it returns the greatest key below it.
func (w *pageWalker) walk(id uint64, depth int, lo, hi []byte) ([]byte, error) {
	if id < 2 || id >= w.hwm {
		return nil, fmt.Errorf("corrupt: page %d out of the file's %d pages", id, w.hwm)
	}
	p, err := w.read(id)
	if err != nil {
		return nil, err
	}
	return w.walkPage(p, id, depth, lo, hi)
}

// walkPage checks the page p (id, 0 for an inline bucket's) and the pages
// it refers to. Its keys must rise and lie in [lo, hi) (nil: unbounded),
// and the keys below a branch's element from its key to the next one's,
// as bbolt's own check wants them: that check also runs, unasked, in a
// goroutine of bbolt's when it rebuilds the freelist of a file opened for
// writing or checked, and there an error is a panic while the check goes
// on reading the file as it is unmapped, a crash no recover catches. It
// returns the greatest key below p.
func (w *pageWalker) walkPage(p []byte, id uint64, depth int, lo, hi []byte) ([]byte, error) {
	if depth > maxPageDepth {
		return nil, fmt.Errorf("corrupt: page %d: the tree is deeper than %d", id, maxPageDepth)
	}
	if len(p) < pageHeaderSize {
		return nil, fmt.Errorf("corrupt: page %d: short", id)
	}
	flags := binary.LittleEndian.Uint16(p[8:])
	count := int(binary.LittleEndian.Uint16(p[10:]))
	// Checked before the elements, of which there may be none: bbolt
	// takes any page that is not a leaf for a branch, and descends into
	// its first element, there or not.
	switch {
	case flags != branchPageFlag && flags != leafPageFlag:
		return nil, fmt.Errorf("corrupt: page %d: not a branch or leaf page (flags %#x)", id, flags)
	case flags == branchPageFlag && count == 0:
		return nil, fmt.Errorf("corrupt: page %d: a branch page with no elements", id)
	}
	if pageHeaderSize+count*elementSize > len(p) {
		return nil, fmt.Errorf("corrupt: page %d: %d elements do not fit", id, count)
	}
	// The keys first, for each branch element needs the next one's.
	keys := make([][]byte, count)
	for i := range count {
		off := uint64(pageHeaderSize + i*elementSize)
		e := p[off : off+elementSize]
		var pos, ksize, vsize uint64
		if flags == branchPageFlag {
			pos, ksize = uint64(binary.LittleEndian.Uint32(e)), uint64(binary.LittleEndian.Uint32(e[4:]))
		} else {
			pos, ksize, vsize = uint64(binary.LittleEndian.Uint32(e[4:])), uint64(binary.LittleEndian.Uint32(e[8:])), uint64(binary.LittleEndian.Uint32(e[12:]))
		}
		if off+pos+ksize+vsize > uint64(len(p)) {
			return nil, fmt.Errorf("corrupt: page %d: element %d out of the page", id, i)
		}
		keys[i] = p[off+pos : off+pos+ksize]
	}
	prev := lo
	for i, key := range keys {
		if prev != nil {
			if c := bytes.Compare(prev, key); c > 0 || c == 0 && i > 0 {
				return nil, fmt.Errorf("corrupt: page %d: key %d out of order", id, i)
			}
		}
		if hi != nil && bytes.Compare(key, hi) >= 0 {
			return nil, fmt.Errorf("corrupt: page %d: key %d out of order, not below the next key above it", id, i)
		}
		off := uint64(pageHeaderSize + i*elementSize)
		e := p[off : off+elementSize]
		if flags == branchPageFlag {
			next := hi
			if i+1 < count {
				next = keys[i+1]
			}
			top, err := w.walk(binary.LittleEndian.Uint64(e[8:]), depth+1, key, next)
			if err != nil {
				return nil, err
			}
			prev = key
			if top != nil {
				prev = top
			}
			continue
		}
		prev = key
		if binary.LittleEndian.Uint32(e)&bucketLeafFlag == 0 {
			continue
		}
		pos, ksize, vsize := uint64(binary.LittleEndian.Uint32(e[4:])), uint64(binary.LittleEndian.Uint32(e[8:])), uint64(binary.LittleEndian.Uint32(e[12:]))
		v := p[off+pos+ksize : off+pos+ksize+vsize]
		if len(v) < bucketValueSize {
			return nil, fmt.Errorf("corrupt: page %d: element %d: short bucket", id, i)
		}
		// A bucket's keys are a tree of their own.
		var err error
		if root := binary.LittleEndian.Uint64(v); root != 0 {
			_, err = w.walk(root, depth+1, nil, nil)
		} else {
			_, err = w.walkPage(v[bucketValueSize:], 0, depth+1, nil, nil)
		}
		if err != nil {
			return nil, err
		}
	}
	return prev, nil
}

// metaPage is what one of a bolt file's two meta pages holds: bbolt
// writes them in turn, each commit the one its transaction id's parity
// names, and reads the valid one of the higher id.
type metaPage struct {
	raw   []byte
	valid bool
	txid  uint64
}

// readMetas reads both meta pages of a file of page size ps.
func readMetas(f *os.File, ps uint64) ([2]metaPage, error) {
	var out [2]metaPage
	for i := range uint64(2) {
		m := make([]byte, 64)
		if _, err := f.ReadAt(m, int64(i*ps+pageHeaderSize)); err != nil {
			return out, err
		}
		h := fnv.New64a()
		h.Write(m[:56])
		out[i] = metaPage{
			raw:   m,
			valid: binary.LittleEndian.Uint32(m) == metaMagic && binary.LittleEndian.Uint32(m[4:]) == metaVersion && h.Sum64() == binary.LittleEndian.Uint64(m[56:]),
			txid:  binary.LittleEndian.Uint64(m[48:]),
		}
	}
	return out, nil
}

// checkMetas says what a damaged meta page cost, "" when both are whole
// (or neither is, which checkPages refuses): bbolt reads the other one
// without a word, and when the damaged one was the newer, the commit it
// recorded is gone. Its transaction id is read from the damaged page as
// it is, so it is named as what the page says.
func checkMetas(f *os.File) string {
	hdr := make([]byte, pageHeaderSize+12)
	if _, err := f.ReadAt(hdr, 0); err != nil {
		return ""
	}
	ps := uint64(binary.LittleEndian.Uint32(hdr[pageHeaderSize+8:]))
	if ps < 512 || ps > 1<<20 {
		return ""
	}
	metas, err := readMetas(f, ps)
	if err != nil || metas[0].valid == metas[1].valid {
		return ""
	}
	good, bad := 0, 1
	if metas[1].valid {
		good, bad = 1, 0
	}
	g, b := metas[good].txid, metas[bad].txid
	switch {
	case b == g+1:
		return fmt.Sprintf("meta page %d is damaged: the last commit, transaction %d, is lost; the store is read as of transaction %d (meta page %d), the commit before it", bad, b, g, good)
	case b < g:
		return fmt.Sprintf("meta page %d, of the older transaction %d, is damaged: nothing is lost, and the next commit writes it again", bad, b)
	default:
		return fmt.Sprintf("meta page %d is damaged (it reads transaction %d): the store is read as of transaction %d (meta page %d), and commits after that one may be lost", bad, b, g, good)
	}
}
