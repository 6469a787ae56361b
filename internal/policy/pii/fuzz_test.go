package pii

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

var fuzzSeeds = append(slices.Clone(streamTexts),
	"call 202-555-0173 now",
	"a@b.co@c.de x..y@z.io ...q@r.st",
	"GB82 WEST 1234 5698 7654 32GB82WEST12345698765432",
	"1.1.1.1.1 ::ffff:1.2.3.4 fe80::1%eth0 [::1]:80",
	"TCK-1 xTCK-2 _TCK-3 TCK-4x\nkey:a\nkey:b",
	"\xff\xfe invalid \xe2\x82 utf-8 \xe2\x82\xac ü\xcc",
)

// checkFindings asserts what Find promises of any text: findings in
// bounds, sorted, non-overlapping, of the set's kinds; each one also a
// finding of its kind alone (settling overlaps only drops candidates);
// and the checksums that define the validated kinds.
func checkFindings(t *testing.T, s *Set, text string, fs []Finding) {
	t.Helper()
	end := 0
	for _, f := range fs {
		if f.Start < end || f.Start >= f.End || f.End > len(text) || !slices.Contains(s.Kinds(), f.Kind) {
			t.Fatalf("bad findings %v in %q", fs, text)
		}
		end = f.End
		if !slices.Contains(s.Find(text, f.Kind), f) {
			t.Fatalf("%v is not among the %s findings %v of %q", f, f.Kind, s.Find(text, f.Kind), text)
		}
		m := text[f.Start:f.End]
		switch f.Kind {
		case Card:
			if !luhn(m) {
				t.Fatalf("card %q fails Luhn", m)
			}
		case IBAN:
			if !mod97(m) {
				t.Fatalf("IBAN %q fails mod-97", m)
			}
		case IP:
			if _, err := netip.ParseAddr(m); err != nil {
				t.Fatalf("IP %q: %v", m, err)
			}
		case Email:
			if strings.Count(m, "@") != 1 {
				t.Fatalf("e-mail %q", m)
			}
		}
	}
}

// FuzzStreamRedactor checks the stream contract for the text cut into
// chunks whose sizes come from sizes (cycled), with built-in and custom
// detectors of every shape.
func FuzzStreamRedactor(f *testing.F) {
	for i, text := range fuzzSeeds {
		f.Add(text, []byte{byte(i), 1, 7, 3})
	}
	f.Add("4111 1111 1111 1111", []byte{5})
	f.Add("jane@example.com", []byte{})
	s, err := New(streamCustom)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string, sizes []byte) {
		checkFindings(t, s, text, s.Find(text))
		var chunks []string
		for i, rest := 0, text; rest != ""; i++ {
			n := len(rest)
			if len(sizes) > 0 {
				n = min(n, int(sizes[i%len(sizes)]%64))
			}
			chunks = append(chunks, rest[:n]) // n may be 0: an empty Write
			rest = rest[n:]
			if i > 4*len(text)+8 {
				chunks = append(chunks, rest)
				break
			}
		}
		checkStream(t, s, text, chunks)
	})
}

// FuzzFind checks Find's invariants on any text.
func FuzzFind(f *testing.F) {
	for _, text := range fuzzSeeds {
		f.Add(text)
	}
	s, err := New(streamCustom)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		fs := s.Find(text)
		checkFindings(t, s, text, fs)
		if !slices.Equal(fs, s.Find(text)) {
			t.Fatal("Find is not deterministic")
		}
		Redact(text, fs)
	})
}
