package web

import "testing"

func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{`{"type":"label","text":"x"}`, `{"type":"range","t0":1,"t1":2,"points":10,"id":"a"}`,
		`{"type":"discrete","discrete":true}`, `not json`, `{"id":[1]}`, `{}`, `{"type":"events","events":["a","b"]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parseRequest(b)
		if err == nil && r.Type == "" {
			t.Fatalf("accepted %q without a type", b)
		}
		if err != nil && r != nil {
			t.Fatal("both a request and an error")
		}
	})
}
