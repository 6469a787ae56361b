package inference

import "testing"

func TestJSONEnd(t *testing.T) {
	for _, c := range []struct {
		pieces []string
		want   string // the value's bytes; "" with done false: not ended
		done   bool
	}{
		{[]string{`{"a":`, ` 1}`, "\n   "}, `{"a": 1}`, true},
		{[]string{`{"a":"}"`, `,"b":[1,{"c":"\"]"}]}`, `x`}, `{"a":"}","b":[1,{"c":"\"]"}]}`, true},
		{[]string{` [1, 2`, `]  `}, ` [1, 2]`, true},
		{[]string{`"a \" b"  `}, `"a \" b"`, true},
		{[]string{`{"a": {`, `"b": 2}`}, `{"a": {"b": 2}`, false},
		{[]string{`42`, `  `}, `42  `, false},
		{[]string{`{"k":"\\"}`, `}`}, `{"k":"\\"}`, true},
	} {
		var j JSONEnd
		var got []byte
		done := false
		for _, p := range c.pieces {
			n, d := j.Feed([]byte(p))
			got = append(got, p[:n]...)
			if d {
				done = true
				break
			}
		}
		if string(got) != c.want || done != c.done {
			t.Errorf("%q: got %q done=%v, want %q done=%v", c.pieces, got, done, c.want, c.done)
		}
	}
}

func FuzzJSONEnd(f *testing.F) {
	f.Add([]byte(`{"a":[1,"]"]} x`), 3)
	f.Fuzz(func(t *testing.T, b []byte, split int) {
		var j JSONEnd
		if split < 0 || split > len(b) {
			split = len(b) / 2
		}
		n1, d := j.Feed(b[:split])
		if n1 < 0 || n1 > split {
			t.Fatalf("n %d of %d", n1, split)
		}
		if !d {
			n2, _ := j.Feed(b[split:])
			if n2 < 0 || n2 > len(b)-split {
				t.Fatalf("n %d of %d", n2, len(b)-split)
			}
		}
	})
}
