package sqlstore

import "testing"

func TestRebind(t *testing.T) {
	cases := []struct {
		p        Placeholder
		in, want string
	}{
		{Question, "SELECT ? , ?", "SELECT ? , ?"},
		{Dollar, "SELECT a FROM t WHERE b = ? AND c = ?", "SELECT a FROM t WHERE b = $1 AND c = $2"},
		{Dollar, "SELECT '?' , \"x?\" , ?", "SELECT '?' , \"x?\" , $1"},
		{Dollar, "SELECT ? -- why?\n, ?", "SELECT $1 -- why?\n, $2"},
		{Dollar, "SELECT 'unterminated ?", "SELECT 'unterminated ?"},
		{Dollar, "SELECT 1 -- trailing ?", "SELECT 1 -- trailing ?"},
		{Dollar, "no placeholders", "no placeholders"},
	}
	for _, c := range cases {
		if got := Rebind(c.p, c.in); got != c.want {
			t.Errorf("Rebind(%v, %q) = %q, want %q", c.p, c.in, got, c.want)
		}
	}
}

func FuzzRebind(f *testing.F) {
	f.Add("SELECT ? FROM t WHERE a = '?' -- ?\n AND b = ?")
	f.Fuzz(func(t *testing.T, q string) {
		out := Rebind(Dollar, q)
		if len(out) < len(q) {
			t.Fatalf("Rebind shortened %q to %q", q, out)
		}
		if Rebind(Question, q) != q {
			t.Fatalf("Question style changed %q", q)
		}
	})
}
