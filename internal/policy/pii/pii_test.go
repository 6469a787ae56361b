package pii

import (
	"errors"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"
)

func mustSet(t testing.TB, custom map[string]string) *Set {
	t.Helper()
	s, err := New(custom)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// texts returns the matched texts of fs.
func texts(text string, fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, text[f.Start:f.End])
	}
	return out
}

func TestDetectors(t *testing.T) {
	s := mustSet(t, nil)
	for _, tc := range []struct {
		kind, text string
		want       []string // the matched texts, in order
	}{
		// email
		{Email, "write to jane.doe+news@mail.example.co.uk today", []string{"jane.doe+news@mail.example.co.uk"}},
		{Email, "first-last@sub.domain.org, x_y%z@ex-ample.io; UPPER@EXAMPLE.COM.", []string{"first-last@sub.domain.org", "x_y%z@ex-ample.io", "UPPER@EXAMPLE.COM"}},
		{Email, "<mailto:bob@example.com> (alice@example.net)", []string{"bob@example.com", "alice@example.net"}},
		{Email, "wait...jane@example.com", []string{"jane@example.com"}},
		{Email, "a@b and @x.com and x@y and john@localhost", nil},
		{Email, "john@example.c, john.@example.com", nil},
		{Email, "john..doe@example.com", []string{"doe@example.com"}},
		{Email, "a@b@example.com, j@-ex.com, j@ex-.com, j@ex..com, j@example.com_x", nil},
		{Email, strings.Repeat("a", 65) + "@example.com", nil},
		{Email, strings.Repeat("a", 64) + "@example.com", []string{strings.Repeat("a", 64) + "@example.com"}},

		// phone
		{Phone, "call +44 20 7946 0958 or +1-202-555-0173", []string{"+44 20 7946 0958", "+1-202-555-0173"}},
		{Phone, "or (202) 555-0173 or 202-555-0173 or +33612345678", []string{"(202) 555-0173", "202-555-0173", "+33612345678"}},
		{Phone, "UK 020 7946 0958, FR 06 12 34 56 78, DE 030 12345678.", []string{"020 7946 0958", "06 12 34 56 78", "030 12345678"}},
		{Phone, "+44 (0)20 7946 0958, +1 (202) 555-0173, 1-800-555-0173, 0044 20 7946 0958", []string{"+44 (0)20 7946 0958", "+1 (202) 555-0173", "1-800-555-0173", "0044 20 7946 0958"}},
		{Phone, "(020) 7946 0958 and 202.555.0173", []string{"(020) 7946 0958", "202.555.0173"}},
		{Phone, "in 2024 we sold 1,000,000 units, v1.2.3, on 2024-11-25 at 10:30", nil},
		{Phone, "dated 01.02.2024 or 25/11/2024, id 20241125, amount 12345678, +5 points", nil},
		{Phone, "x+44 20 7946 0958, 12.202-555-0173, 202-555-0173-12, 123-456-7890, 250 300 1200", nil},
		{Phone, "+1234567890123456 is too long, +1 234 too short", nil},

		// iban
		{IBAN, "pay GB82 WEST 1234 5698 7654 32 now", []string{"GB82 WEST 1234 5698 7654 32"}},
		{IBAN, "pay DE89370400440532013000.", []string{"DE89370400440532013000"}},
		{IBAN, "DE89 3704 0044 0532 0130 00 and FR14 2004 1010 0505 0001 3M02 606", []string{"DE89 3704 0044 0532 0130 00", "FR14 2004 1010 0505 0001 3M02 606"}},
		{IBAN, "NL91ABNA0417164300 BE68539007547034 CH9300762011623852957 NO9386011117947", []string{"NL91ABNA0417164300", "BE68539007547034", "CH9300762011623852957", "NO9386011117947"}},
		{IBAN, "ES9121000418450200051332 IT60X0542811101000000123456 AT611904300234573201", []string{"ES9121000418450200051332", "IT60X0542811101000000123456", "AT611904300234573201"}},
		{IBAN, "PL61109010140000071219812874 SE4550000000058398257466 DK5000400440116243", []string{"PL61109010140000071219812874", "SE4550000000058398257466", "DK5000400440116243"}},
		{IBAN, "FI2112345600000785 IE29AIBK93115212345678 PT50000201231234567890154 LU280019400644750000", []string{"FI2112345600000785", "IE29AIBK93115212345678", "PT50000201231234567890154", "LU280019400644750000"}},
		{IBAN, "BE68 5390 0754 7034 2024 is the account", []string{"BE68 5390 0754 7034"}},
		{IBAN, "SA0380000000608010167519 (a country without a listed length)", []string{"SA0380000000608010167519"}},
		{IBAN, "pay GB82 WEST 1234 5698 7654 33 now", nil},                  // a digit changed
		{IBAN, "DE89 3704 0044 0532 0130 01, DE893704004405320130000", nil}, // checksum; length
		{IBAN, "gb82west12345698765432, XGB82WEST12345698765432, GB82WEST12345698765432x", nil},
		{IBAN, "GB82 WEST12345698765432", nil}, // not grouped in fours

		// card
		{Card, "card 4111 1111 1111 1111 ok", []string{"4111 1111 1111 1111"}},
		{Card, "card 4111-1111-1111-1111.", []string{"4111-1111-1111-1111"}},
		{Card, "378282246310005, 3782 822463 10005, 5555555555554444, 4222222222222", []string{"378282246310005", "3782 822463 10005", "5555555555554444", "4222222222222"}},
		{Card, "6011 1111 1111 1117 exp 12/27 cvc 123; 4111 1111 1111 1111 123", []string{"6011 1111 1111 1117", "4111 1111 1111 1111"}},
		{Card, "bad 4111 1111 1111 1112 and 4111111111111112", nil},
		{Card, "x4111111111111111, 41111111111111110000, 1.4111111111111111, 4111111111111111.5", nil},
		{Card, "4111 1111-1111 1111, 4111  1111 1111 1111, 4111 11 11 1111 1111", nil},

		// ip
		{IP, "from 192.168.0.1 and 10.0.0.255", []string{"192.168.0.1", "10.0.0.255"}},
		{IP, "http://10.0.0.1:8080/x, 10.1.0.0/16, [2001:db8::1]:443", []string{"10.0.0.1", "10.1.0.0", "2001:db8::1"}},
		{IP, "not 999.1.1.1 nor 1.2.3 nor 1.2.3.4.5 nor v1.2.3.4 nor 01.2.3.4", nil},
		{IP, "v6 2001:db8::1 and ::1 and fe80::1ff:fe23:4567:890a.", []string{"2001:db8::1", "::1", "fe80::1ff:fe23:4567:890a"}},
		{IP, "full 2001:0db8:85a3:0000:0000:8a2e:0370:7334 and ::ffff:192.0.2.1", []string{"2001:0db8:85a3:0000:0000:8a2e:0370:7334", "::ffff:192.0.2.1"}},
		{IP, "at 12:30:45 on 2024-11-25, std::vector, a :: b, 00:1a:2b:3c:4d:5e", nil},
	} {
		if got := texts(tc.text, s.Find(tc.text, tc.kind)); !slices.Equal(got, tc.want) {
			t.Errorf("%s in %q:\n got %q\nwant %q", tc.kind, tc.text, got, tc.want)
		}
	}
}

func TestOverlaps(t *testing.T) {
	s := mustSet(t, map[string]string{"digits": `\d{6,}`})
	for _, tc := range []struct{ text, want string }{
		// Phone yields to the card even though it starts earlier.
		{"+1 4111 1111 1111 1111", "+1 [REDACTED:card]"},
		// The IBAN's digits look like a trunk phone number.
		{"NL91 ABNA 0417 1643 00", "[REDACTED:iban]"},
		// Same start: the longer wins.
		{"4111111111111111@example.com", "[REDACTED:email]"},
		{"+14155550173@sms.example.com", "[REDACTED:email]"},
		// Earlier start wins: the card before the e-mail.
		{"4111 1111 1111 1111@example.com", "[REDACTED:card]@example.com"},
		// A custom kind competes by position and length: it does not
		// suppress a phone number.
		{"call +33612345678", "call [REDACTED:phone]"},
		{"order 123456789", "order [REDACTED:digits]"},
	} {
		if got := Redact(tc.text, s.Find(tc.text)); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.text, got, tc.want)
		}
	}
	// Phone numbers yield to the strong kinds even when only phone
	// numbers are looked for.
	for _, text := range []string{"NL91 ABNA 0417 1643 00", "+1 4111 1111 1111 1111", "+14155550173@sms.example.com"} {
		if fs := s.Find(text, Phone); fs != nil {
			t.Errorf("phone numbers in %q: %v", text, fs)
		}
	}
	if fs := s.Find("IBAN NL91 ABNA 0417 1643 01, call 020 7946 0958", Phone); len(fs) != 2 {
		t.Errorf("an invalid IBAN's digits are a phone number, and the phone number is: %v", fs)
	}
}

func TestFindAllKinds(t *testing.T) {
	s := mustSet(t, map[string]string{"employee_id": `EMP-\d{6}`})
	text := "Jane (jane@corp.example, EMP-123456) paid with 4111 1111 1111 1111 from 10.1.2.3, IBAN DE89 3704 0044 0532 0130 00, tel +49 30 1234567."
	fs := s.Find(text)
	want := []Finding{{Email, 6, 23}, {"employee_id", 25, 35}, {Card, 47, 66}, {IP, 72, 80}, {IBAN, 87, 114}, {Phone, 120, 134}}
	if !slices.Equal(fs, want) {
		t.Fatalf("got %v\nwant %v", fs, want)
	}
	if got, want := Redact(text, fs), "Jane ([REDACTED:email], [REDACTED:employee_id]) paid with [REDACTED:card] from [REDACTED:ip], IBAN [REDACTED:iban], tel [REDACTED:phone]."; got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if got, want := Redact(text, s.Find(text, Card, "employee_id", "nope")), "Jane (jane@corp.example, [REDACTED:employee_id]) paid with [REDACTED:card] from 10.1.2.3, IBAN DE89 3704 0044 0532 0130 00, tel +49 30 1234567."; got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if fs := s.Find(text, "nope"); fs != nil {
		t.Fatalf("an unknown kind found %v", fs)
	}
	if fs := s.Find("nothing to see here"); fs != nil {
		t.Fatalf("found %v", fs)
	}
}

func TestRedact(t *testing.T) {
	for _, tc := range []struct {
		text string
		fs   []Finding
		want string
	}{
		{"hello", nil, "hello"},
		{"mail a@b.co now", []Finding{{Email, 5, 11}}, "mail [REDACTED:email] now"},
		{"ab", []Finding{{"x", 0, 1}, {"y", 1, 2}}, "[REDACTED:x][REDACTED:y]"},
		// Overlapping, out of order and out of range: every byte of every
		// span is still redacted.
		{"0123456789", []Finding{{"b", 5, 8}, {"a", 1, 6}}, "0[REDACTED:a][REDACTED:b]89"},
		{"0123456789", []Finding{{"a", 1, 9}, {"b", 2, 4}}, "0[REDACTED:a]9"},
		{"0123", []Finding{{"a", 2, 99}}, "01[REDACTED:a]"},
	} {
		if got := Redact(tc.text, tc.fs); got != tc.want {
			t.Errorf("Redact(%q, %v) = %q, want %q", tc.text, tc.fs, got, tc.want)
		}
	}
}

func TestNew(t *testing.T) {
	s := mustSet(t, map[string]string{"zeta": `z+`, "alpha": `a+`})
	if got, want := s.Kinds(), []string{Email, Phone, IBAN, Card, IP, "alpha", "zeta"}; !slices.Equal(got, want) {
		t.Errorf("Kinds() = %v, want %v", got, want)
	}
	if got, want := Builtin(), []string{Email, Phone, IBAN, Card, IP}; !slices.Equal(got, want) {
		t.Errorf("Builtin() = %v, want %v", got, want)
	}
	for name, pat := range map[string]string{
		"Bad":                                "x",
		"1x":                                 "x",
		"a_very_long_kind_name_of_33_chars_": "x",
		"email":                              "x",
		"paren":                              "(",
		"star":                               "a*",
		"boundary":                           `\b`,
		"opt":                                `(?:abc)?`,
	} {
		_, err := New(map[string]string{name: pat, "ok": "fine"})
		var pe *PatternError
		if !errors.As(err, &pe) || pe.Kind != name || pe.Pattern != pat || !strings.Contains(err.Error(), `"`+name+`"`) {
			t.Errorf("New(%q: %q) = %v, want a *PatternError naming it", name, pat, err)
		}
	}
	_, err := New(map[string]string{"paren": "("})
	var se *syntax.Error
	if !errors.As(err, &se) {
		t.Errorf("a compile error does not unwrap to *syntax.Error: %v", err)
	}
}

// The custom pattern analysis that the stream's hold-back relies on.
func TestCustomAnalysis(t *testing.T) {
	for _, tc := range []struct {
		pat      string
		min, max int // max: tooLong for no bound
		left     bool
	}{
		{`EMP-\d{6}`, 10, 10, false},
		{`\bTCK-\d+\b`, 5, tooLong, true},
		{`(?i)k`, 1, 3, false}, // the Kelvin sign
		{`ü{2,3}`, 2, 6, false},
		{`(?m)^a|b`, 1, 1, true},
		{`a{0,2}b`, 1, 3, false},
		{`.`, 1, 4, false},
		{`(?:ab|c)x*`, 1, tooLong, false},
	} {
		tree, err := syntax.Parse(tc.pat, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		if got := minRunes(tree); got != tc.min {
			t.Errorf("minRunes(%q) = %d, want %d", tc.pat, got, tc.min)
		}
		if got := maxBytes(tree); got != tc.max {
			t.Errorf("maxBytes(%q) = %d, want %d", tc.pat, got, tc.max)
		}
		if got := looksLeft(tree); got != tc.left {
			t.Errorf("looksLeft(%q) = %v", tc.pat, got)
		}
	}
	var ascii [128]bool
	var high bool
	tree, _ := syntax.Parse(`(?i)x[0-9]+\S`, syntax.Perl)
	alphabet(tree, &ascii, &high)
	if !ascii['x'] || !ascii['X'] || !ascii['5'] || !ascii['!'] || ascii[' '] || ascii['\n'] || !high {
		t.Errorf("alphabet of %q is wrong", `(?i)x[0-9]+\S`)
	}
}

// benchPrompt is a prompt of about 2 KB with a few PII items.
var benchPrompt = strings.Repeat("The quarterly report covers revenue, costs and the hiring plan for 2025; see section 4.2 and the appendix. ", 8) +
	"Please reach me at jane.doe@example.com or +1-202-555-0173 about invoice 2024-117. " +
	strings.Repeat("Our team of 12 met on 2024-11-25 to review version 1.2.3 of the roadmap and the budget of 1,000,000 EUR. ", 6) +
	"Payment: card 4111 1111 1111 1111, IBAN DE89 3704 0044 0532 0130 00; the server is 10.20.30.40. " +
	strings.Repeat("Summarise the above in three bullet points, in plain English. ", 4)

func BenchmarkFind(b *testing.B) {
	s := mustSet(b, nil)
	if n := len(s.Find(benchPrompt)); n != 5 {
		b.Fatalf("%d findings in the benchmark prompt, want 5", n)
	}
	b.SetBytes(int64(len(benchPrompt)))
	b.ReportAllocs()
	for b.Loop() {
		s.Find(benchPrompt)
	}
}

func BenchmarkFindCustom(b *testing.B) {
	s := mustSet(b, map[string]string{"employee_id": `EMP-\d{6}`, "ticket": `\bTCK-\d+\b`})
	b.SetBytes(int64(len(benchPrompt)))
	b.ReportAllocs()
	for b.Loop() {
		s.Find(benchPrompt)
	}
}

func BenchmarkStream(b *testing.B) {
	s := mustSet(b, nil)
	b.SetBytes(int64(len(benchPrompt)))
	b.ReportAllocs()
	for b.Loop() {
		r := s.NewStreamRedactor()
		for i := 0; i < len(benchPrompt); i += 16 {
			r.Write(benchPrompt[i:min(i+16, len(benchPrompt))])
		}
		r.Flush()
	}
}
