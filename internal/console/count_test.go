package console

import "testing"

func TestCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 9999: "9,999", 12345: "12.3 k", 123456: "123 k", 1234567: "1.2 M", 12345678: "12 M"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
}
