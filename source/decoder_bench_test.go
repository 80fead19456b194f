package source

import (
	"fmt"
	"testing"
)

// BenchmarkDecoderChangeOne10k is the decoding share of a revision that
// changes one file of 10,000 (ConfigMaps): the rest come from the
// Decoder's cache, checked by content digest.
func BenchmarkDecoderChangeOne10k(b *testing.B) {
	files := make([]File, 10_000)
	for i := range files {
		files[i] = File{Name: fmt.Sprintf("app-%05d.yaml", i), Data: []byte(configMap(fmt.Sprintf("app-%05d", i)))}
	}
	var d Decoder
	if _, errs := d.Decode(Contents{Files: files}); len(errs) > 0 {
		b.Fatal(errs)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		files[7].Data = []byte(configMap(fmt.Sprintf("app-%05d-%d", 7, i)))
		objs, errs := d.Decode(Contents{Files: files})
		if len(objs) != len(files) || len(errs) > 0 {
			b.Fatal(len(objs), errs)
		}
	}
}
