package perfevent

import (
	"encoding/binary"
	"testing"

	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/testutil"
)

// mmapFormat is sys_enter_mmap's format file as Linux 6.18 prints it.
const mmapFormat = `name: sys_enter_mmap
ID: 174
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:int __syscall_nr;	offset:8;	size:4;	signed:1;
	field:unsigned long addr;	offset:16;	size:8;	signed:0;
	field:unsigned long len;	offset:24;	size:8;	signed:0;
	field:unsigned long prot;	offset:32;	size:8;	signed:0;
	field:unsigned long flags;	offset:40;	size:8;	signed:0;
	field:unsigned long fd;	offset:48;	size:8;	signed:0;
	field:unsigned long off;	offset:56;	size:8;	signed:0;

print fmt: "addr: 0x%08lx, len: 0x%08lx", ((unsigned long)(REC->addr)), ((unsigned long)(REC->len))
`

func TestParseTraceFormat(t *testing.T) {
	f, err := ParseTraceFormat(mmapFormat)
	if err != nil {
		t.Fatal(err)
	}
	if len(f) != 11 {
		t.Errorf("got %d fields, want 11: %v", len(f), f)
	}
	if got := f["len"]; got != (TraceField{Offset: 24, Size: 8}) {
		t.Errorf("len = %+v", got)
	}
	if got := f["common_pid"]; got != (TraceField{Offset: 4, Size: 4, Signed: true}) {
		t.Errorf("common_pid = %+v", got)
	}
	// Arrays and pointers are named without their decoration.
	g, err := ParseTraceFormat("\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:unsigned long * user_mask_ptr;\toffset:32;\tsize:8;\tsigned:0;\n")
	if err != nil {
		t.Fatal(err)
	}
	if g["comm"].Size != 16 || g["user_mask_ptr"].Offset != 32 {
		t.Errorf("decorated names: %v", g)
	}
	for _, bad := range []string{"", "name: x\nID: 1\n", "field:int x;\toffset:z;\tsize:4;", "field:;\toffset:1;\tsize:4;", "field:int x;\tsize:4;"} {
		if _, err := ParseTraceFormat(bad); err == nil {
			t.Errorf("ParseTraceFormat(%q) accepted", bad)
		}
	}
}

func TestTracepointUint(t *testing.T) {
	f, _ := ParseTraceFormat(mmapFormat + "\tfield:long ret;\toffset:64;\tsize:8;\tsigned:1;\n\tfield:int small;\toffset:72;\tsize:4;\tsigned:1;\n")
	tp := &Tracepoint{Fields: f}
	raw := make([]byte, 76)
	binary.LittleEndian.PutUint64(raw[24:], 1<<30)
	binary.LittleEndian.PutUint32(raw[72:], uint32(0xfffffff2)) // -14
	if v, ok := tp.Uint(raw, "len"); !ok || v != 1<<30 {
		t.Errorf("len = %d, %v", v, ok)
	}
	if v, ok := tp.Uint(raw, "small"); !ok || int64(v) != -14 {
		t.Errorf("small = %d, %v: want -14 sign-extended", int64(v), ok)
	}
	if _, ok := tp.Uint(raw[:30], "len"); ok {
		t.Error("a short record must not be read")
	}
	if _, ok := tp.Uint(raw, "nope"); ok {
		t.Error("an absent field must not be read")
	}
}

// TestReadTracepointLive reads a syscall tracepoint of this kernel. As root
// (CI) tracefs must be there; without root it takes NUMASCOPE_TEST_NO_ROOT
// to skip (testutil.NotPermitted).
func TestReadTracepointLive(t *testing.T) {
	tp, err := ReadTracepoint(sysfs.New(""), "syscalls", "sys_enter_mmap")
	if err != nil {
		testutil.NotPermitted(t, "no syscall tracepoint to read: %v", err)
	}
	if tp.ID == 0 || tp.Fields["len"].Size != 8 {
		t.Errorf("sys_enter_mmap: %+v", tp)
	}
}

func FuzzParseTraceFormat(f *testing.F) {
	f.Add(mmapFormat)
	f.Add("field:char comm[16];\toffset:8;\tsize:16;\tsigned:0;")
	f.Fuzz(func(t *testing.T, s string) {
		fields, err := ParseTraceFormat(s)
		if err != nil {
			return
		}
		for name, fd := range fields {
			if name == "" || fd.Offset < 0 || fd.Size < 0 {
				t.Fatalf("bad field %q %+v", name, fd)
			}
			tp := &Tracepoint{Fields: fields}
			tp.Uint(make([]byte, 64), name) // must not panic
		}
	})
}
