package main

import (
	"bytes"
	"strings"
	"testing"
)

// script is perf script -F comm,ip,sym output with one sample per part
// this test checks, and one sample of another command.
const script = `mirrorctl 
	ffffffff813ae493 finish_task_switch.isra.0
	          4a1b2c runtime.mallocgc+0x1c
	          5b2c3d github.com/mirrorctl/mirrorctl/replicate.(*worker).copyRecords.func1+0x40
	          6c3d4e github.com/twmb/franz-go/pkg/kgo.(*Client).PollRecords+0x10

mirrorctl 
	          7d4e5f github.com/klauspost/compress/s2.encodeBlockSnappy
	          8e5f60 github.com/mirrorctl/mirrorctl/internal/kafka.xerialSnappy.Compress
	          9f6071 github.com/twmb/franz-go/pkg/kgo.seqRecBatch.appendTo

mirrorctl 
	          a07182 runtime.scanobject
	          b18293 runtime.gcDrain
	          c293a4 runtime.gcBgMarkWorker
	          d3a4b5 runtime.mstart

mirrorctl 
	          e4b5c6 runtime.futex
	          f5c6d7 runtime.findRunnable
	          06d7e8 runtime.schedule

mirrorctl 
	          17e8f9 [unknown]

java 
	          28f90a github.com/mirrorctl/mirrorctl/replicate.(*worker).pollLoop
`

func TestCountAttributesEachSampleToItsInnermostOwner(t *testing.T) {
	got, err := count(strings.NewReader(script), "mirrorctl")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"mirrorctl": 1, "compression": 1, "runtime: GC": 1, "runtime: scheduler": 1, "other": 1}
	if len(got) != len(want) {
		t.Fatalf("parts %v, want %v", got, want)
	}
	for p, n := range want {
		if got[p] != n {
			t.Errorf("%s: %d samples, want %d (all: %v)", p, got[p], n, got)
		}
	}
	java, err := count(strings.NewReader(script), "java")
	if err != nil {
		t.Fatal(err)
	}
	if java["mirrorctl"] != 1 || len(java) != 1 {
		t.Fatalf("-comm java: %v, want the one java sample, in mirrorctl", java)
	}
}

func TestCountRefusesFramesWithoutASample(t *testing.T) {
	_, err := count(strings.NewReader("\t  4a1b2c runtime.mallocgc\n"), "mirrorctl")
	if err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("err %v, want one naming line 1", err)
	}
}

func TestCountRefusesInputWithoutTheCommandsSamples(t *testing.T) {
	for name, in := range map[string]string{
		"another command":      "java \n\t  4a1b2c runtime.mallocgc\n",
		"a pid after the name": "mirrorctl 4242\n\t  4a1b2c runtime.mallocgc\n",
		"empty":                "",
	} {
		_, err := count(strings.NewReader(in), "mirrorctl")
		if err == nil || !strings.Contains(err.Error(), `no samples of command "mirrorctl"`) {
			t.Errorf("%s: err %v, want no samples of command \"mirrorctl\"", name, err)
		}
	}
}

func TestWriteComparesEachFileWithTheFirst(t *testing.T) {
	var b bytes.Buffer
	write(&b, []string{"one", "three"}, []map[string]int{{"mirrorctl": 10, "franz-go": 20, "crc32": 10}, {"mirrorctl": 11, "franz-go": 30, "crc32": 12, "other": 4}})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != len(parts)+2 {
		t.Fatalf("%d lines, want a header, %d parts and all:\n%s", len(lines), len(parts), b.String())
	}
	for _, want := range []string{"mirrorctl\t10\t11\t1.10\t0.92\t", "franz-go\t20\t30\t1.50\t1.25\t", "crc32\t10\t12\t1.20\t1.00\t",
		"other\t0\t4\t-\t-\t", "all\t40\t57\t1.43\t1.19\t"} {
		if !strings.Contains(b.String(), "\n"+want) {
			t.Errorf("no line %q in:\n%s", want, b.String())
		}
	}
}
