package recording

import (
	"strings"
	"testing"
)

// TestTimeBackwardsSkipped: a crafted recording whose time goes backwards
// (which numascope never writes) loads without that sample, listed in
// Skipped naming its line, in both formats; the samples kept ascend.
func TestTimeBackwardsSkipped(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string
		samples          int
	}{
		{"jsonl", `{"type":"header","format":"numascope","version":1,"interval_s":1,"sensors":[],"columns":[{"name":"a.x","sensor":"a","event":"x","sources":[],"unit":"","kind":"counter","desc":""}]}
[0,1]
[1,1]
[-1e300,1]
[1,2]
[2,1]
`, "line 4: time goes backwards (t=-1e+300 after t=1 on line 3); skipped", 4},
		{"legacy", `[["vmstat"],
["pgfault"],
[1000000,1],
[2000000,1],
[1000,1],
["label",1000,"early label: kept"],
[3000000,1]
]
`, "line 5: time goes backwards (1000 µs after 2e+06 µs on line 4); skipped", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := Read(strings.NewReader(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.Skipped) != 1 || rec.Skipped[0] != tc.want {
				t.Errorf("Skipped = %q, want [%q]", rec.Skipped, tc.want)
			}
			for i := 1; i < len(rec.Samples); i++ {
				if rec.Samples[i].T < rec.Samples[i-1].T {
					t.Errorf("sample %d at %v after %v", i, rec.Samples[i].T, rec.Samples[i-1].T)
				}
			}
			if len(rec.Samples) != tc.samples {
				t.Errorf("%d samples, want %d (equal times are kept)", len(rec.Samples), tc.samples)
			}
		})
	}
}

// TestCraftedNamesCleanedOnLoad: labels, host, kernel, sensors and columns
// read from a file are cleaned as labels are on their way in,
// so that no reader (view's page, convert, the experiment analysis) gets
// an escape or a bidi override from them.
func TestCraftedNamesCleanedOnLoad(t *testing.T) {
	for _, tc := range []struct{ name, file string }{
		{"jsonl", `{"type":"header","format":"numascope","version":1,"host":"h\u001b]2;PWNED\u0007","kernel":"k\u202e","interval_s":1,"sensors":[{"name":"a\u202e","present":false,"reason":"\u001b[2J","sources":["s\u0007"]}],"columns":[{"name":"a.x\u0007\u202e","sensor":"a\u202e","event":"x\u001b","sources":["s\u0007"],"unit":"%\u0000","kind":"counter","desc":"d\u202e"}]}
[0,1]
{"type":"label","t":0,"text":"p\u001b]2;PWNED\u0007\u202e\u0000"}
`},
		{"legacy", "[[\"vmstat\"],\n[\"pgfault\\u001b[2J\\u202e\"],\n[1000000,1],\n[\"label\",1000000,\"p\\u001b]2;PWNED\\u0007\\u202e\\u0000\"]\n]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := Read(strings.NewReader(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			texts := []string{rec.Header.Host, rec.Header.Kernel}
			for _, s := range rec.Header.Sensors {
				texts = append(append(texts, s.Name, s.Reason), s.Sources...)
			}
			for _, c := range rec.Columns {
				texts = append(append(texts, c.Name, c.Sensor, c.Event, c.Unit, c.Desc), c.Sources...)
			}
			for _, m := range rec.Labels() {
				texts = append(texts, m.Text)
			}
			if len(rec.Labels()) != 1 || rec.Labels()[0].Text != "p]2;PWNED" {
				t.Errorf("labels %+v, want one: %q", rec.Labels(), "p]2;PWNED")
			}
			for _, s := range texts {
				if strings.ContainsAny(s, "\x1b\x07\x00\u202e") {
					t.Errorf("%q survives Load", s)
				}
			}
		})
	}
}
